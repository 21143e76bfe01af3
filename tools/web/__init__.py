"""What webfetch makes of the web: HTML turned into Markdown or text."""
