package site

import (
	"regexp"
	"strings"
)

// runtimeRules translate the messages labrun records in results files (why a variant was
// skipped, what failed) for the Chinese pages. The patterns follow the messages of
// internal/lab (skipReason, the build) and the emu_skip reasons of the labs' lab.yaml; a message
// no rule knows stays as recorded. TestRuntimeTextCoversRecordedMessages keeps them complete.
var runtimeRules = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^not on the emulator: (.*)$`), "模拟器上不运行：$1"},
	{regexp.MustCompile(`^compile: (.*)$`), "编译失败：$1"},
	{regexp.MustCompile(`needs cuBLAS, which exists on NVIDIA GPUs only`), "需要 cuBLAS，它只在 NVIDIA GPU 上提供"},
	{regexp.MustCompile(`needs NCCL, which exists on NVIDIA GPUs only`), "需要 NCCL，它只在 NVIDIA GPU 上提供"},
	{regexp.MustCompile(`needs NCCL, which is not installed here \(libnccl\.so\.2; labrun doctor says how to get it\)`),
		"需要 NCCL，但本机没有安装（libnccl.so.2；labrun doctor 会说明如何安装）"},
	{regexp.MustCompile(`needs a GPU \(the emulator runs plain CUDA only\)`), "需要 GPU（模拟器只运行普通 CUDA 代码）"},
	{regexp.MustCompile(`needs (\d+) devices at once; the (\S+) backend has (\d+) from device (\d+) \(the emulator: --emu-devices (\d+)\)`),
		"需要同时使用 $1 个设备；$2 后端从设备 $4 起只有 $3 个（模拟器可用 --emu-devices $5）"},
	{regexp.MustCompile(`needs sm_90a \(Hopper: wgmma, TMA\); this device is (\S+)`), "需要 sm_90a（Hopper：wgmma、TMA）；本设备是 $1"},
	{regexp.MustCompile(`needs (sm_\d+) or newer; this device is (\S+)`), "需要 $1 或更新的架构；本设备是 $2"},
	{regexp.MustCompile(`TMA loads and stores`), "TMA 加载与存储"},
	{regexp.MustCompile(`inline PTX \(([^)]*)\) runs on NVIDIA GPUs only`), "内联 PTX（$1）只能在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`inline PTX for Hopper \(([^)]*)\) runs on sm_90a GPUs only`), "面向 Hopper 的内联 PTX（$1）只能在 sm_90a GPU 上运行"},
	{regexp.MustCompile(`NCCL and cuBLAS run on NVIDIA GPUs only`), "NCCL 和 cuBLAS 只在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`NCCL runs on NVIDIA GPUs only`), "NCCL 只在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`cuBLAS is GPU-only`), "cuBLAS 只在 GPU 上运行"},
	// Peer variants (internal/lab/peer.go, labs/common/peers/klpeer.py, the labs' peers/*.py).
	{regexp.MustCompile(`^a Python peer \(([^)]*)\) runs on a GPU only, not on the emulator$`), "Python 对照实现（$1）只在 GPU 上运行，不在模拟器上运行"},
	{regexp.MustCompile(`^no Python interpreter "([^"]*)" here \(install python3 with torch, or set (\S+)\)$`),
		"本机没有 Python 解释器“$1”（请安装带 torch 的 python3，或设置 $2）"},
	{regexp.MustCompile(`^(\S+) cannot run the peer: (.*) \(pip install ([^)]*)\)$`), "$1 无法运行对照实现：$2（pip install $3）"},
	{regexp.MustCompile(`^python cannot import (\S+) \((.*)\): pip install (.*)$`), "python 无法导入 $1（$2）：pip install $3"},
	{regexp.MustCompile(`^torch sees no CUDA device$`), "torch 看不到 CUDA 设备"},
	{regexp.MustCompile(`^torch\._grouped_mm multiplies groups of one N and K \(a MoE layer\); these groups differ$`),
		"torch._grouped_mm 只计算 N 和 K 都相同的组（一个 MoE 层）；这些组的 N 或 K 不同"},
	{regexp.MustCompile(`^torch\._grouped_mm takes bf16 operands; this suite is fp32$`), "torch._grouped_mm 只接受 bf16 操作数；这个套件是 fp32"},
	{regexp.MustCompile(`^this torch \((\S+)\) has no torch\._grouped_mm \(PyTorch 2\.8 or newer\)$`),
		"这个 torch（$1）没有 torch._grouped_mm（需要 PyTorch 2.8 或更新版本）"},
	// The labs' drivers (the GEMM launch rules and the grouped-GEMM driver).
	{regexp.MustCompile(`^too slow for this size: (\S+) would run (\d+) GFLOP per call, above its limit of (\d+) \(params\.max_gflop in lab\.yaml\)$`),
		"这个规模太慢：$1 每次调用要算 $2 GFLOP，超过了它的上限 $3（lab.yaml 中的 params.max_gflop）"},
	{regexp.MustCompile(`^(\S+) loads tiles with TMA, whose row strides must be multiples of 16 bytes: (\S+) and (\S+) must be multiples of 8 \(this problem has (.*)\)$`),
		"$1 用 TMA 加载分块，TMA 要求行跨度是 16 字节的倍数：$2 和 $3 必须是 8 的倍数（这个问题是 $4）"},
	{regexp.MustCompile(`^(\S+) is the MoE form \(one token matrix, one N and K for all experts\); the groups of this problem differ in N or K$`),
		"$1 是 MoE 形式（一个 token 矩阵，所有专家共用同一个 N 和 K）；这个问题的各组 N 或 K 不同"},
}

// runtimeText is a recorded message in the page's language.
func runtimeText(lang, s string) string {
	if lang != "zh" || s == "" {
		return s
	}
	for _, r := range runtimeRules {
		s = r.re.ReplaceAllString(s, r.zh)
	}
	// Lists inside the Chinese text use the enumeration comma.
	if strings.ContainsAny(s, "（") {
		s = listCommaRE.ReplaceAllStringFunc(s, func(m string) string { return strings.ReplaceAll(m, ", ", "、") })
	}
	return s
}

// listCommaRE finds the parenthesised lists that the rules carried over from English.
var listCommaRE = regexp.MustCompile(`（[^（）]*）`)
