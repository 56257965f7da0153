"""The chapters: one module or subpackage per notebook."""
