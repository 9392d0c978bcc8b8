"""Evidence: decision receipts, the HMAC-chained ledger with signed checkpoints, and verification."""
