"""Where session children run: the ``[placement]`` section, the pure policy that picks a node
(``policy``), and the backends behind one seam (``backend``: ``local`` here; ``ray`` places
children on the nodes of a Ray cluster). Importing this package imports none of them."""
