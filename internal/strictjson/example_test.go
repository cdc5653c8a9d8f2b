package strictjson_test

import (
	"errors"
	"fmt"

	"github.com/devspace-dev/devspace/internal/strictjson"
)

func ExampleCheck() {
	schema, err := strictjson.Compile([]byte(`{"type":"object","properties":{
		"processId":{"type":"string"},"yieldTimeMs":{"type":"integer"}},"required":["processId"]}`))
	if err != nil {
		panic(err)
	}

	err = strictjson.Check([]byte(`{"processId":"p1","yield-timeMs":30000}`), schema, strictjson.Options{})
	var e *strictjson.Error
	if errors.As(err, &e) {
		fmt.Println(e.Reason, e.Path, e.Suggestion)
		fmt.Println(e)
	}
	// Output:
	// unknown_field /yield-timeMs yieldTimeMs
	// unknown field "yield-timeMs" in the top-level object; did you mean "yieldTimeMs"?
}
