"""``[placement]``: its defaults, the address forms it takes, the warnings a bad value gives
(naming the key, keeping its default), and the ``corral daemon`` flags over the file."""

from __future__ import annotations

import pytest

from actors.app import Config
from protocol.errors import ConfigInvalid
from supervisor.config import parse_config
from supervisor.placement.config import PlacementConfig, with_flags


def test_the_default_is_the_local_backend() -> None:
    assert Config().placement == PlacementConfig(backend="local", address="auto",
                                                 heartbeat_timeout=5.0, node_resource="")


@pytest.mark.parametrize("address", [
    "auto", "10.0.0.5:6379", "head.example.org:6379", "ray://10.0.0.5:10001",
    "ray://head:10001", "[fd00::5]:6379", "ray://[::1]:10001",
])
def test_every_address_form_loads(address: str) -> None:
    loaded = parse_config(Config, f'[placement]\nbackend = "ray"\naddress = "{address}"\n')
    assert loaded.warnings == []
    assert loaded.config.placement.address == address and loaded.config.placement.backend == "ray"


@pytest.mark.parametrize("address", [
    "", "head", "10.0.0.5", "http://10.0.0.5:6379", "ray://head", "head:port", "a b:6379",
    "10.0.0.5:6379/x", "ray:/head:1",
])
def test_a_bad_address_is_a_warning_naming_the_key_and_keeps_auto(address: str) -> None:
    loaded = parse_config(Config, f'[placement]\naddress = "{address}"\n')
    assert loaded.config.placement.address == "auto"
    assert loaded.warnings == [
        f"bad value for 'placement.address': expected auto, HOST:PORT or ray://HOST:PORT, "
        f'got "{address}"; using default "auto"']


@pytest.mark.parametrize(("line", "key"), [
    ('backend = "kubernetes"', "backend"), ("heartbeat_timeout = 0", "heartbeat_timeout"),
    ("heartbeat_timeout = -1.0", "heartbeat_timeout"), ('node_resource = "a b"', "node_resource"),
])
def test_bad_values_are_warnings_and_keep_their_defaults(line: str, key: str) -> None:
    loaded = parse_config(Config, f"[placement]\n{line}\n")
    assert loaded.config.placement == PlacementConfig()
    assert len(loaded.warnings) == 1 and f"'placement.{key}'" in loaded.warnings[0]


def test_the_other_keys_load() -> None:
    loaded = parse_config(Config, '[placement]\nheartbeat_timeout = 2.5\nnode_resource = "corral"\n')
    assert loaded.warnings == []
    assert loaded.config.placement == PlacementConfig(heartbeat_timeout=2.5, node_resource="corral")


def test_flags_override_the_file() -> None:
    file = PlacementConfig(backend="ray", address="10.0.0.5:6379", node_resource="corral")
    assert with_flags(file) == file
    assert with_flags(file, backend="local") == PlacementConfig(
        backend="local", address="10.0.0.5:6379", node_resource="corral")
    assert with_flags(file, address="ray://head:10001").address == "ray://head:10001"
    assert with_flags(PlacementConfig(), backend="ray", address="auto").backend == "ray"


@pytest.mark.parametrize(("flags", "message"), [
    ({"backend": "k8s"}, "bad --placement 'k8s': want local or ray"),
    ({"backend": "ray", "address": "head"}, "bad --ray-address 'head': want auto, HOST:PORT or ray://HOST:PORT"),
    ({"address": "10.0.0.5:6379"}, "--ray-address needs the ray backend"),
    ({"backend": "local", "address": "auto"}, "--ray-address needs the ray backend"),
])
def test_a_bad_flag_is_config_invalid_naming_it(flags: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        with_flags(PlacementConfig(), **flags)
    assert caught.value.message.startswith(message)
