"""Who a client is: static per-client tokens and OAuth 2.1 resource-server mode, producing
`pipeline.Identity` with roles and a recorded consent ceiling. Import the submodules directly.
"""
