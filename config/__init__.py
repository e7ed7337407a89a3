"""Configuration: typed settings, the default policy and example files."""
