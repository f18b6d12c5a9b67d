package lab

import "testing"

func TestNaNPoison(t *testing.T) {
	if FP32.NaNPoison() != PoisonNaN32 || BF16.NaNPoison() != PoisonNaN {
		t.Fatalf("NaNPoison: fp32 %+v, bf16 %+v; want PoisonNaN32 and PoisonNaN", FP32.NaNPoison(), BF16.NaNPoison())
	}
}
