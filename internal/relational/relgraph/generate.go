package relgraph

//go:generate go tool gqlgen generate --config gqlgen.yml
