"""Results: column schema, atomic row store, summaries."""
