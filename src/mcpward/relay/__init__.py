"""Sessions: id remapping, namespacing several upstreams, cursors, list_changed fan-in, catalog."""
