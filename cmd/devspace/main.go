package main

import (
	_ "github.com/gin-gonic/gin"
	_ "github.com/glebarez/sqlite"
	_ "github.com/go-oauth2/oauth2/v4/manage"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "golang.org/x/crypto/argon2"
	_ "golang.org/x/oauth2"
	_ "gorm.io/gorm"
)

func main() {}
