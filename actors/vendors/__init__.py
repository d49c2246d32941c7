"""Vendor harness drivers: one package per vendor CLI (launch builder, translator, detection)."""
