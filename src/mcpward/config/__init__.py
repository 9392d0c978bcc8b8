"""The gateway's YAML configuration: pydantic models, loading, and located error messages."""

from mcpward.config.loader import ConfigError, load_config, parse_config
from mcpward.config.models import GatewayConfig

__all__ = ["ConfigError", "GatewayConfig", "load_config", "parse_config"]
