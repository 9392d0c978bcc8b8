"""The gateway's YAML configuration: pydantic models (`models`, and `upstreams` for the upstream
entries alone), loading and located error messages (`loader`). Import the submodule you need:
`mcpward run` reads an upstream's entry before it loads the rest."""
