package pjrt

import (
	"bytes"
	"testing"
)

// xTimesXPlusOne is f(x) = x*x + 1 in StableHLO.
var xTimesXPlusOne = []byte(`
module @x_times_x_plus_one {
  func.func @main(%x: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.multiply %x, %x : tensor<f32>
    %1 = stablehlo.constant dense<1.0> : tensor<f32>
    %2 = stablehlo.add %0, %1 : tensor<f32>
    return %2 : tensor<f32>
  }
}`)

// A program serialized by one client loads into another (as into a new process) and computes
// the same, without compiling; its configuration (portable, one device) comes back with it.
func TestSerializeDeserializeAndLoad(t *testing.T) {
	compiler := getPJRTClient(t)
	exec, err := compiler.Compile().WithStableHLO(xTimesXPlusOne).Done()
	if err != nil {
		t.Fatal(err)
	}
	serialized, err := exec.Serialize()
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	if len(serialized) == 0 {
		t.Fatal("Serialize returned no bytes")
	}
	loader := getPJRTClient(t)
	loaded, err := loader.DeserializeAndLoad(serialized)
	if err != nil {
		t.Fatalf("DeserializeAndLoad: %v", err)
	}
	if got, want := execWithScalars(t, loader, loaded, float32(3)), float32(10); got != want {
		t.Errorf("loaded program: f(3) = %g, want %g", got, want)
	}
	if got, want := execWithScalars(t, compiler, exec, float32(3)), float32(10); got != want {
		t.Errorf("compiled program: f(3) = %g, want %g", got, want)
	}
	if !loaded.IsPortable() || loaded.NumOutputs != 1 {
		t.Errorf("loaded program: portable %v, %d outputs; want portable, 1 output", loaded.IsPortable(), loaded.NumOutputs)
	}
	again, err := loaded.Serialize()
	if err != nil || len(again) == 0 {
		t.Errorf("a loaded program does not serialize again: %d bytes, %v", len(again), err)
	}
	for name, bad := range map[string][]byte{"garbage": bytes.Repeat([]byte{0x5a}, len(serialized)),
		"truncated": serialized[:len(serialized)/2]} {
		if _, err := loader.DeserializeAndLoad(bad); err == nil {
			t.Errorf("DeserializeAndLoad of %s bytes returned no error", name)
		}
	}
	if _, err := loader.DeserializeAndLoad(nil); err == nil {
		t.Error("DeserializeAndLoad(nil) returned no error")
	}
}

// A compile hook sees the program and its options, may compile, and may answer instead.
func TestCompileHook(t *testing.T) {
	client := getPJRTClient(t)
	var seen []*CompileRequest
	var stored []byte
	client.SetCompileHook(func(req *CompileRequest) (*LoadedExecutable, error) {
		seen = append(seen, req)
		if stored != nil {
			return req.Client.DeserializeAndLoad(stored)
		}
		exec, err := req.Compile()
		if err == nil {
			stored, err = exec.Serialize()
		}
		return exec, err
	})
	first, err := client.Compile().WithStableHLO(xTimesXPlusOne).Done()
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.Compile().WithStableHLO(xTimesXPlusOne).Done()
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("the hook saw %d compiles, want 2", len(seen))
	}
	req := seen[0]
	if req.Client != client || !bytes.Equal(req.Program, xTimesXPlusOne) || req.ProgramFormat != "mlir" || len(req.CompileOptions) == 0 {
		t.Errorf("request: client %v, program %q (%s), %d bytes of options", req.Client == client, req.Program, req.ProgramFormat, len(req.CompileOptions))
	}
	if !bytes.Equal(seen[1].CompileOptions, req.CompileOptions) {
		t.Error("the same program's compile options differ between two compiles")
	}
	if a, b := execWithScalars(t, client, first, float32(2)), execWithScalars(t, client, second, float32(2)); a != 5 || b != 5 {
		t.Errorf("f(2): compiled %g, loaded by the hook %g; want 5", a, b)
	}
	if !second.IsPortable() {
		t.Error("the hook's program lost CompileConfig.Done's configuration (portable)")
	}
	client.SetCompileHook(nil)
	if _, err := client.Compile().WithStableHLO(xTimesXPlusOne).Done(); err != nil || len(seen) != 2 {
		t.Errorf("without the hook: %v, hook called %d times (want 2)", err, len(seen))
	}
}
