"""The figures: computed once from the tables, checked, judged, tied to the paper and exported as data."""
