"""The `tile` commands as typer declares them: their flags and help, each a thin call into the
modules that do the work."""
