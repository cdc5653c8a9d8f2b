package cli_test

import (
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestMain(m *testing.M) { apptest.Main(m) }
