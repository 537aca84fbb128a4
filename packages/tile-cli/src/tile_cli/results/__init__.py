"""The commands that read what runs left: the run history and the HTML report."""
