// Package realservers holds tests, and nothing else, that start published
// stdio MCP servers from the npm registry (pinned by
// testdata/realservers/package-lock.json, installed by `make deps`) confined
// as a new user would: with nothing but a read grant for their install
// directory and the dummy API keys they need to start. Each must list
// exactly what a bare go-sdk client lists.
package realservers
