package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/internal/safetensors"
	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// StateDict is a PyTorch state_dict read from a file, with what its wrapper recorded.
type StateDict struct {
	// File is the file read.
	File string
	// Keys are the tensor names in the file's order (after removing Prefix), Tensors the tensors.
	Keys    []string
	Tensors map[string]*torchfile.Tensor
	// Wrapper is the key of the checkpoint dict that held the state_dict ("net", "state_dict",
	// "model", "model_state_dict"), or "" for a bare state_dict.
	Wrapper string
	// Prefix is what was removed from every key ("module." of DataParallel, "_orig_mod." of
	// torch.compile, or both), or "".
	Prefix string
	// Acc and Epoch are the wrapper's "acc" (in percent, as pytorch-cifar saves it) and "epoch",
	// when it records them (HasAcc, HasEpoch).
	Acc      float64
	HasAcc   bool
	Epoch    int
	HasEpoch bool
	// Metadata is a safetensors file's __metadata__ (nil for torch.save files).
	Metadata map[string]string
}

// wrapperKeys are the keys under which training scripts save the state_dict in a checkpoint
// dict, in the order they are looked for.
var wrapperKeys = []string{"state_dict", "model_state_dict", "net", "model"}

// prefixes are what wrappers of a module add to every key.
var prefixes = []string{"module.", "_orig_mod."}

// ReadStateDict reads a state_dict from a torch.save zip file (torch >= 1.6; nothing in it is
// executed) or a .safetensors file, unwrapping a checkpoint dict and removing the prefixes of
// DataParallel and torch.compile.
func ReadStateDict(path string) (*StateDict, error) {
	if isSafetensors(path) {
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return fromSafetensors(path, f)
	}
	f, err := torchfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return fromTorch(path, f.Root)
}

// isSafetensors tells a safetensors file (an 8-byte header length, then '{') from a zip.
func isSafetensors(path string) bool {
	if strings.EqualFold(filepath.Ext(path), ".safetensors") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [9]byte
	n, _ := f.Read(head[:])
	return n == 9 && head[8] == '{' && string(head[:2]) != "PK"
}

// safetensorsDTypes maps safetensors' dtype names to torchfile's.
var safetensorsDTypes = map[string]torchfile.DType{
	"F32": torchfile.Float32, "F64": torchfile.Float64, "F16": torchfile.Float16, "BF16": torchfile.BFloat16,
	"I64": torchfile.Int64, "I32": torchfile.Int32, "I16": torchfile.Int16, "I8": torchfile.Int8,
	"U8": torchfile.Uint8, "BOOL": torchfile.Bool,
}

// fromSafetensors turns a safetensors file's tensors into a StateDict.
func fromSafetensors(path string, f *safetensors.File) (*StateDict, error) {
	sd := &StateDict{File: path, Tensors: map[string]*torchfile.Tensor{}, Metadata: f.Metadata}
	for _, t := range f.Tensors {
		dt, ok := safetensorsDTypes[t.DType]
		if !ok {
			return nil, &RefusalError{File: path, Kind: ErrDType, Detail: fmt.Sprintf("tensor %q has dtype %s, which is not handled: "+
				"save the state_dict in float32 ({k: v.float() for k, v in sd.items()}, num_batches_tracked as int64)", t.Name, t.DType)}
		}
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		strides := make([]int, len(t.Shape))
		step := 1
		for i := len(t.Shape) - 1; i >= 0; i-- {
			strides[i] = step
			step *= t.Shape[i]
		}
		sd.Keys = append(sd.Keys, t.Name)
		sd.Tensors[t.Name] = &torchfile.Tensor{DType: dt, Shape: t.Shape, Strides: strides,
			Storage: &torchfile.Storage{Key: t.Name, DType: dt, Numel: n, Data: t.Data}}
	}
	return sd.stripPrefixes(), nil
}

// fromTorch finds the state_dict in a torch.save file's root object.
func fromTorch(path string, root any) (*StateDict, error) {
	sd := &StateDict{File: path}
	d, ok := root.(*torchfile.Dict)
	if !ok {
		return nil, &RefusalError{File: path, Kind: ErrNoStateDict, Detail: "the file holds a single value, not a dict: save the weights " +
			"with torch.save(model.state_dict(), FILE)"}
	}
	if !isStateDict(d) {
		var inner *torchfile.Dict
		for _, k := range wrapperKeys {
			if v, ok := d.Get(k); ok {
				if w, ok := v.(*torchfile.Dict); ok && isStateDict(w) {
					inner, sd.Wrapper = w, k
					break
				}
			}
		}
		if inner == nil {
			return nil, &RefusalError{File: path, Kind: ErrNoStateDict, Detail: fmt.Sprintf("the file's top-level keys are %s; import "+
				"reads a state_dict (torch.save(model.state_dict(), FILE)) or a checkpoint dict holding one under %s",
				keyList(d), strings.Join(wrapperKeys, ", "))}
		}
		if v, ok := d.Get("acc"); ok {
			switch x := v.(type) {
			case float64:
				sd.Acc, sd.HasAcc = x, true
			case int:
				sd.Acc, sd.HasAcc = float64(x), true
			case *torchfile.Tensor:
				if f, err := x.Float32(); err == nil && len(f) == 1 {
					sd.Acc, sd.HasAcc = float64(f[0]), true
				}
			}
		}
		if v, ok := d.Get("epoch"); ok {
			sd.Epoch, sd.HasEpoch = v.(int)
		}
		d = inner
	}
	sd.Tensors = map[string]*torchfile.Tensor{}
	for i, k := range d.Keys {
		sd.Keys = append(sd.Keys, k.(string))
		sd.Tensors[k.(string)] = d.Values[i].(*torchfile.Tensor)
	}
	return sd.stripPrefixes(), nil
}

// isStateDict says whether d maps strings to tensors only.
func isStateDict(d *torchfile.Dict) bool {
	if d.Len() == 0 {
		return false
	}
	for i, k := range d.Keys {
		if _, ok := k.(string); !ok {
			return false
		}
		if _, ok := d.Values[i].(*torchfile.Tensor); !ok {
			return false
		}
	}
	return true
}

// keyList formats a dict's keys for a message.
func keyList(d *torchfile.Dict) string {
	var keys []string
	for _, k := range d.Keys {
		keys = append(keys, fmt.Sprintf("%v", k))
		if len(keys) == 8 {
			keys = append(keys, "...")
			break
		}
	}
	return "[" + strings.Join(keys, ", ") + "]"
}

// stripPrefixes removes "module." and "_orig_mod." while every key has one of them.
func (sd *StateDict) stripPrefixes() *StateDict {
	for {
		stripped := false
		for _, p := range prefixes {
			all := len(sd.Keys) > 0
			for _, k := range sd.Keys {
				all = all && strings.HasPrefix(k, p) && len(k) > len(p)
			}
			if !all {
				continue
			}
			tensors := map[string]*torchfile.Tensor{}
			for i, k := range sd.Keys {
				sd.Keys[i] = k[len(p):]
				tensors[sd.Keys[i]] = sd.Tensors[k]
			}
			sd.Tensors, sd.Prefix, stripped = tensors, sd.Prefix+p, true
		}
		if !stripped {
			return sd
		}
	}
}
