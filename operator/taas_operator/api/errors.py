"""What validation reports: one `FieldError` per problem, all of them in a `TFJobValidationError`.

Paths are written the way kube-apiserver 1.34 writes them for the same check (see
`validation.py`), so `str(error)` reads like kubectl's output.
"""

from __future__ import annotations

from pydantic import BaseModel


class FieldError(BaseModel):
    """One problem: where (apiserver-style field path) and what (message with a fix).

    `blocking` marks the kinds of schema error (wrong type, required, enum, too long, too many)
    after which the apiserver skips the CRD's CEL rules; it is not part of the text.
    """

    path: str
    message: str
    blocking: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class TFJobValidationError(ValueError):
    """A TFJob manifest broke one or more rules; `.errors` lists them all."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))
