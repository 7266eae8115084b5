"""The documentation is true: every command in a checked block parses, every path it names
exists, included examples are the files, links and anchors resolve."""
