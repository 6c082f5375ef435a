module windsock.dev/client

go 1.19
