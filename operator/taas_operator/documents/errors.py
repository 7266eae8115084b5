"""`InputError`: what the user gave (a file, a YAML document, a TFJob spec, an argument) cannot be
used. Its text says what and how to fix it; the CLI prints it and exits with code 2, the dashboard
answers it as a 400/422 with that text."""

from __future__ import annotations


class InputError(Exception):
    """A file, YAML document, TFJob spec or argument that cannot be used; the text says why."""
