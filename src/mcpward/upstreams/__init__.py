"""Upstream connectors: a stdio server process under its lifeline, an HTTP client behind the
egress filter. They sit below the relay and know nothing of guards or sessions."""
