//go:build cgo && linux

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// CUfunction_attribute values (cuda.h) that Attrs and SetMaxDynamicShared use.
const (
	funcAttrMaxThreadsPerBlock    = 0
	funcAttrSharedSizeBytes       = 1
	funcAttrLocalSizeBytes        = 3
	funcAttrNumRegs               = 4
	funcAttrMaxDynamicSharedBytes = 8
)

// module is a loaded cubin or fatbin.
type module struct {
	d    *device
	m    C.CUmodule
	path string
	once sync.Once
}

// LoadModule loads a compiled kernel image (cubin, fatbin or PTX) from a file.
// LoadUntrustedModule loads a submission's image like any other: a cubin or fatbin holds device
// code only, which runs on the GPU under the driver's memory protection; none of a submission's
// host code is compiled (nvcc builds device images) or run.
func (d *device) LoadUntrustedModule(path string) (gpu.Module, error) { return d.LoadModule(path) }

func (d *device) LoadModule(path string) (gpu.Module, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var m C.CUmodule
	if err := check("cuModuleLoad", C.kl_module_load(d.ctx, &m, cpath)); err != nil {
		return nil, fmt.Errorf("load module %s: %w", path, err)
	}
	return &module{d: d, m: m, path: path}, nil
}

// Kernel looks up an entry point by its symbol name (declare kernels extern "C" so that the
// name is not mangled).
func (m *module) Kernel(name string) (gpu.Kernel, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	if err := check("cuModuleGetFunction", C.kl_module_get_function(m.d.ctx, &f, m.m, cname)); err != nil {
		return nil, fmt.Errorf("kernel %s in %s (is it declared extern \"C\"?): %w", name, m.path, err)
	}
	return &kernel{d: m.d, f: f, name: name}, nil
}

// Close unloads the module; its kernels must not be launched afterwards. Safe to call twice.
func (m *module) Close() error {
	var err error
	m.once.Do(func() { err = check("cuModuleUnload", C.kl_module_unload(m.d.ctx, m.m)) })
	return err
}

// kernel is one entry point of a module.
type kernel struct {
	d    *device
	f    C.CUfunction
	name string

	paramsOnce sync.Once
	params     []gpu.Param
	paramsErr  error
}

func (k *kernel) Name() string { return k.name }

// Params reads the kernel's parameter layout with cuFuncGetParamInfo (CUDA 12.4+), once. The
// driver knows offsets and sizes, not C types, so Param.Type is empty.
func (k *kernel) Params() ([]gpu.Param, error) {
	k.paramsOnce.Do(func() { k.params, k.paramsErr = k.readParams() })
	if k.paramsErr != nil {
		return nil, k.paramsErr
	}
	return append([]gpu.Param(nil), k.params...), nil
}

// maxParams bounds the loop below: kernel parameters fit in 32 KiB, so at most 32764 of them.
const maxParams = 1 << 15

func (k *kernel) readParams() ([]gpu.Param, error) {
	if C.kl_has_func_param_info() == 0 {
		return nil, errors.New("cuda: this NVIDIA driver has no cuFuncGetParamInfo (it is older than CUDA 12.4), " +
			"so kernel arguments cannot be checked; update the driver")
	}
	params := []gpu.Param{}
	for i := 0; i < maxParams; i++ {
		var off, size C.size_t
		r := C.kl_func_param_info(k.d.ctx, k.f, C.size_t(i), &off, &size)
		if r == cudaErrorInvalidValue { // past the last parameter
			return params, nil
		}
		if err := check("cuFuncGetParamInfo", r); err != nil {
			return nil, fmt.Errorf("kernel %s, parameter %d: %w", k.name, i, err)
		}
		params = append(params, gpu.Param{Index: i, Offset: int(off), Size: int(size)})
	}
	return nil, fmt.Errorf("kernel %s: the driver reports more than %d parameters", k.name, maxParams)
}

// Attrs reads the compiled kernel's resource use.
func (k *kernel) Attrs() (gpu.KernelAttrs, error) {
	var a gpu.KernelAttrs
	function := func(attr int) (int, error) {
		var v C.int
		if err := check("cuFuncGetAttribute", C.kl_func_get_attribute(k.d.ctx, &v, C.int(attr), k.f)); err != nil {
			return 0, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		return int(v), nil
	}
	err := readAttrs(function, false, []intAttr{
		{funcAttrNumRegs, &a.NumRegs},
		{funcAttrSharedSizeBytes, &a.StaticSharedBytes},
		{funcAttrLocalSizeBytes, &a.LocalBytes},
		{funcAttrMaxThreadsPerBlock, &a.MaxThreadsPerBlock},
		{funcAttrMaxDynamicSharedBytes, &a.MaxDynamicShared},
	})
	return a, err
}

// MaxActiveBlocksPerSM is how many blocks of the kernel fit on one SM at once
// (cuOccupancyMaxActiveBlocksPerMultiprocessor): registers, shared memory and thread limits.
func (k *kernel) MaxActiveBlocksPerSM(blockThreads, dynamicSharedBytes int) (int, error) {
	var n C.int
	r := C.kl_occupancy_blocks_per_sm(k.d.ctx, &n, k.f, C.int(blockThreads), C.size_t(dynamicSharedBytes))
	if err := check("cuOccupancyMaxActiveBlocksPerMultiprocessor", r); err != nil {
		return 0, fmt.Errorf("kernel %s, %d threads per block: %w", k.name, blockThreads, err)
	}
	return int(n), nil
}

// SetMaxDynamicShared opts the kernel in to more than 48 KiB of dynamic shared memory.
func (k *kernel) SetMaxDynamicShared(bytes int) error {
	r := C.kl_func_set_attribute(k.d.ctx, k.f, funcAttrMaxDynamicSharedBytes, C.int(bytes))
	if err := check("cuFuncSetAttribute", r); err != nil {
		return fmt.Errorf("kernel %s: dynamic shared memory limit %d bytes (the device allows %d with opt-in): %w",
			k.name, bytes, k.d.info.MaxSharedOptin, err)
	}
	return nil
}

// argAlign is the alignment of each argument in the launch block (enough for any by-value type).
const argAlign = 16

// LaunchPacked launches with arguments packed by gpu.Launch. cuLaunchKernel takes an array of
// pointers to the argument values; both live in one C allocation, since cgo forbids passing C
// a Go pointer to memory that holds Go pointers. The driver copies the values before it returns.
func (k *kernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	cs, err := streamOf(cfg.Stream)
	if err != nil {
		return err
	}
	var params *unsafe.Pointer
	if n := len(args); n > 0 {
		ptrBytes := n * int(unsafe.Sizeof(unsafe.Pointer(nil)))
		offsets := make([]int, n)
		total := ptrBytes
		for i, a := range args {
			total = (total + argAlign - 1) / argAlign * argAlign
			offsets[i] = total
			total += len(a)
		}
		block := C.malloc(C.size_t(total))
		if block == nil {
			return fmt.Errorf("cuda: launch %s: out of host memory for %d bytes of arguments", k.name, total)
		}
		defer C.free(block)
		bytes := unsafe.Slice((*byte)(block), total)
		ptrs := unsafe.Slice((*unsafe.Pointer)(block), n)
		for i, a := range args {
			copy(bytes[offsets[i]:], a)
			ptrs[i] = unsafe.Add(block, offsets[i])
		}
		params = (*unsafe.Pointer)(block)
	}
	r := C.kl_launch(k.d.ctx, k.f,
		C.uint(cfg.Grid.X), C.uint(cfg.Grid.Y), C.uint(cfg.Grid.Z),
		C.uint(cfg.Block.X), C.uint(cfg.Block.Y), C.uint(cfg.Block.Z),
		C.uint(cfg.SharedBytes), cs, params)
	return check("cuLaunchKernel", r)
}
