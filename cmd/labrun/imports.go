package main

// The backends and labs that labrun carries. Each registers itself from init.
import (
	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	_ "github.com/kernel-labs/kernellabs/labs/01_device_props"
	_ "github.com/kernel-labs/kernellabs/labs/02_gemm"
	_ "github.com/kernel-labs/kernellabs/labs/03_grouped_gemm"
	_ "github.com/kernel-labs/kernellabs/labs/04_collectives"
	_ "github.com/kernel-labs/kernellabs/labs/05_overlap"
)
