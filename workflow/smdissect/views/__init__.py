"""Per-category report views: `sections(frames) -> [(title, html)]`, placed after the summary."""
