package capi

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

func jsonUnmarshal(b []byte, into any) error { return json.Unmarshal(b, into) }
