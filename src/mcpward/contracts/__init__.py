"""Contract pins: canonical hashing of tool contracts, the drift taxonomy, postures, pin stores."""
