"""Protocol-faithful fake model servers for tests (OpenAI and Anthropic wire formats)."""
