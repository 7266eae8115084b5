"""TaaS package."""
