"""The egress filter: every connection the gateway itself opens (HTTP upstreams, JWKS, hook guards,
the consult endpoint, OTLP export).

`policy` and `addresses` are pure (no network library); `session.egress_session(policy)` gives
the aiohttp session HTTP upstreams use (the hot path), `client.egress_client(policy)` an httpx
client (JWKS fetches, HTTP hook guards). Import the submodule you need: a stdio gateway loads
neither HTTP library.
"""
