package torchfile

import (
	"fmt"
	"regexp"

	"github.com/nlpodyssey/gopickle/types"
)

// The globals a state_dict may name, as Go values that accept exactly the arguments torch.save
// writes: the tensor rebuild functions, the typed storage classes (as markers inside persistent
// ids) and collections.OrderedDict (which gopickle resolves itself). Nothing is executed.

// rebuildTensor is torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
// requires_grad, backward_hooks[, metadata]), and _rebuild_tensor (its first four arguments).
type rebuildTensor struct {
	d  *decoder
	v1 bool
}

// rebuildParameter is torch._utils._rebuild_parameter(data, requires_grad, backward_hooks)
// and _rebuild_parameter_with_state (with a fourth argument, the state): an nn.Parameter is
// read as its tensor.
type rebuildParameter struct {
	d         *decoder
	withState bool
}

// storageType is a typed storage class (torch.FloatStorage, ...), only usable inside a
// persistent id.
type storageType struct {
	name  string
	dtype DType
}

// unhandledStorages are torch's other storage classes: allowed by weights_only, refused here.
var unhandledStorages = map[string]bool{
	"ComplexFloatStorage": true, "ComplexDoubleStorage": true, "QInt8Storage": true, "QUInt8Storage": true,
	"QInt32Storage": true, "QUInt4x2Storage": true, "QUInt2x4Storage": true, "UntypedStorage": true,
}

// findClass is gopickle's FindClass hook: the allow-list.
func (d *decoder) findClass(module, name string) (any, error) {
	switch module + "." + name {
	case "torch._utils._rebuild_tensor_v2":
		return rebuildTensor{d: d}, nil
	case "torch._utils._rebuild_tensor":
		return rebuildTensor{d: d, v1: true}, nil
	case "torch._utils._rebuild_parameter":
		return rebuildParameter{d: d}, nil
	case "torch._utils._rebuild_parameter_with_state":
		return rebuildParameter{d: d, withState: true}, nil
	}
	if module == "torch" {
		if dt, ok := storageTypes[name]; ok {
			return storageType{name: name, dtype: dt}, nil
		}
		if unhandledStorages[name] {
			return nil, d.fail(ErrDType, module+"."+name, "tensors of this dtype are not handled: convert the state_dict "+
				"to float32 in PyTorch ({k: v.float() for k, v in sd.items()}) and save it again")
		}
	}
	return nil, d.fail(ErrUnsafe, module+"."+name, "global not allowed: a state_dict names only torch's tensor "+
		"rebuild functions (torch._utils._rebuild_tensor_v2, _rebuild_parameter), storage types (torch.FloatStorage, ...) "+
		"and collections.OrderedDict, as torch.load(..., weights_only=True) requires; nothing of this file was executed. "+
		"Save only the weights: torch.save(model.state_dict(), FILE)")
}

// storageKey is what a storage key may look like (torch writes decimal numbers); it names a
// zip entry, so nothing else is accepted.
var storageKey = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// persistentLoad resolves ('storage', storage_type, key, location, numel), reading the entry
// PREFIX/data/KEY once per key.
func (d *decoder) persistentLoad(pid any) (any, error) {
	t, ok := pid.(*types.Tuple)
	if !ok || t.Len() != 5 || t.Get(0) != "storage" {
		return nil, d.fail(ErrFormat, describe(pid), "persistent id is not ('storage', type, key, location, numel)")
	}
	st, ok := t.Get(1).(storageType)
	if !ok {
		return nil, d.fail(ErrFormat, describe(t.Get(1)), "persistent id's storage type is not a torch storage class")
	}
	key, ok := t.Get(2).(string)
	if !ok || !storageKey.MatchString(key) {
		return nil, d.fail(ErrFormat, describe(t.Get(2)), "storage key is not a plain name (torch writes 0, 1, 2, ...)")
	}
	if _, ok := t.Get(3).(string); !ok {
		return nil, d.fail(ErrFormat, describe(t.Get(3)), "storage location is not a string like 'cpu' or 'cuda:0'")
	}
	numel, ok := t.Get(4).(int)
	if !ok || numel < 0 {
		return nil, d.fail(ErrFormat, describe(t.Get(4)), "storage element count is not a non-negative int")
	}
	if s, seen := d.storages[key]; seen {
		if s.DType != st.dtype || s.Numel != numel {
			return nil, d.fail(ErrFormat, key, "storage declared twice with different types or sizes (%s[%d], then %s[%d])",
				s.DType, s.Numel, st.dtype, numel)
		}
		return s, nil
	}
	s, err := d.readStorage(key, st.dtype, numel)
	if err != nil {
		return nil, err
	}
	d.storages[key] = s
	return s, nil
}

// Call implements types.Callable.
func (r rebuildTensor) Call(args ...any) (any, error) {
	d := r.d
	if r.v1 && len(args) != 4 || !r.v1 && len(args) != 6 && len(args) != 7 {
		return nil, d.fail(ErrFormat, fmt.Sprintf("%d arguments", len(args)), "_rebuild_tensor_v2 takes "+
			"(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])")
	}
	st, ok := args[0].(*Storage)
	if !ok {
		return nil, d.fail(ErrFormat, describe(args[0]), "a tensor's first argument is not a storage")
	}
	offset, ok := args[1].(int)
	if !ok {
		return nil, d.fail(ErrFormat, describe(args[1]), "a tensor's storage offset is not an int")
	}
	shape, ok1 := intTuple(args[2])
	strides, ok2 := intTuple(args[3])
	if !ok1 || !ok2 {
		return nil, d.fail(ErrFormat, describe(args[2])+", "+describe(args[3]), "a tensor's size and stride are not tuples of ints")
	}
	if msg := checkView(shape, strides, offset, st); msg != "" {
		return nil, d.fail(ErrFormat, "storage "+st.Key, "%s: the file is corrupt or was crafted; torch.load refuses it too", msg)
	}
	if !r.v1 {
		if _, ok := args[4].(bool); !ok {
			return nil, d.fail(ErrFormat, describe(args[4]), "requires_grad is not a bool")
		}
		if !emptyHooks(args[5]) {
			return nil, d.fail(ErrFormat, describe(args[5]), "backward hooks must be empty in a saved state_dict")
		}
	}
	return &Tensor{DType: st.DType, Shape: shape, Offset: offset, Strides: strides, Storage: st}, nil
}

// Call implements types.Callable.
func (r rebuildParameter) Call(args ...any) (any, error) {
	want := 3
	if r.withState {
		want = 4
	}
	if len(args) != want {
		return nil, r.d.fail(ErrFormat, fmt.Sprintf("%d arguments", len(args)), "_rebuild_parameter takes (data, requires_grad, backward_hooks)")
	}
	t, ok := args[0].(*Tensor)
	if !ok {
		return nil, r.d.fail(ErrFormat, describe(args[0]), "a parameter's data is not a tensor")
	}
	if _, ok := args[1].(bool); !ok || !emptyHooks(args[2]) {
		return nil, r.d.fail(ErrFormat, describe(args[1])+", "+describe(args[2]), "a parameter's requires_grad and hooks are not (bool, OrderedDict())")
	}
	return t, nil
}

// intTuple converts a tuple of non-negative-or-not ints (checked by checkView) to []int, for
// at most 16 axes.
func intTuple(v any) ([]int, bool) {
	t, ok := v.(*types.Tuple)
	if !ok || t.Len() > 16 {
		return nil, false
	}
	out := make([]int, t.Len())
	for i := range out {
		if out[i], ok = t.Get(i).(int); !ok {
			return nil, false
		}
	}
	return out, true
}

// emptyHooks accepts an empty OrderedDict (or None): torch.save writes no hooks.
func emptyHooks(v any) bool {
	if v == nil {
		return true
	}
	od, ok := v.(*types.OrderedDict)
	return ok && od.Len() == 0
}
