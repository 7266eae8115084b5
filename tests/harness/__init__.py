"""Test helpers shared by several test folders: `fakeapi`, an in-memory apiserver."""
