"""What a person sees: rich consoles, progress, tables fitted to the width, failures and hints."""
