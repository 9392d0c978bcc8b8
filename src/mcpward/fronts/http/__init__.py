"""The Streamable HTTP front (both protocol eras), closed by default: credentials required,
loopback unless acknowledged, Host/Origin checked, bodies capped. Entry point: `server.serve_http`.
"""
