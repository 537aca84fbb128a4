"""Setting a project up: `tile init`, where tile comes from, `tile config`, `tile fetch`,
`tile --version`."""
