"""Speed and memory targets, measured side by side in one run (`make bench`)."""
