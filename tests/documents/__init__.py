"""The one bounded YAML loader for what users give (files, stdin, the form): YAML bombs and
oversized input refused, and `taas validate` on bad documents."""
