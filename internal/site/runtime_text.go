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
	{regexp.MustCompile(`thread-block clusters`), "线程块簇"},
	{regexp.MustCompile(`distributed shared memory`), "分布式共享内存"},
	{regexp.MustCompile(`TMA multicast`), "TMA 多播"},
	{regexp.MustCompile(`inline PTX \(([^)]*)\) runs on NVIDIA GPUs only`), "内联 PTX（$1）只能在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`inline PTX for Hopper \(([^)]*)\) runs on sm_90a GPUs only`), "面向 Hopper 的内联 PTX（$1）只能在 sm_90a GPU 上运行"},
	{regexp.MustCompile(`NCCL and cuBLAS run on NVIDIA GPUs only`), "NCCL 和 cuBLAS 只在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`NCCL runs on NVIDIA GPUs only`), "NCCL 只在 NVIDIA GPU 上运行"},
	{regexp.MustCompile(`NCCL's device API \(nccl_device\.h\) has no emulator form`), "NCCL 的设备端 API（nccl_device.h）在模拟器上没有对应形式"},
	{regexp.MustCompile(`^(\S+) \(kernel (\d+)\) takes blocks of equal size; this problem's differ$`), "$1（核函数 $2）只接受大小相同的块；这个问题的块大小各不相同"},
	{regexp.MustCompile(`^kernel (\d+) takes shards of equal size; this problem's differ$`), "核函数 $1 只接受大小相同的分片；这个问题的分片大小各不相同"},
	{regexp.MustCompile(`a kernel on NCCL's device API \(nccl_device\.h\), which has no emulator form`),
		"基于 NCCL 设备端 API（nccl_device.h）的核函数，模拟器上没有对应形式"},
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
	{regexp.MustCompile(`^(\S+) copies rows of (\S+) and (\S+) in chunks of (\d+) elements: N and K must be multiples of (\d+) \(this problem has (.*)\)$`),
		"$1 以 $4 个元素为一块拷贝 $2 和 $3 的行：N 和 K 必须是 $5 的倍数（这个问题是 $6）"},
	{regexp.MustCompile(`^(\S+) is the MoE form \(one token matrix, one N and K for all experts\); the groups of this problem differ in N or K$`),
		"$1 是 MoE 形式（一个 token 矩阵，所有专家共用同一个 N 和 K）；这个问题的各组 N 或 K 不同"},
	// What the lab that measures the device records of its ceilings (how each was measured,
	// where its peak comes from) and of a device without NVML.
	{regexp.MustCompile(`^best FMA-chain kernel$`), "最快的 FMA 链核函数"},
	{regexp.MustCompile(`^best copy \(bytes read \+ written\) at working sets ≥ (.*)$`), "工作集 ≥ $1 时最快的拷贝（按读 + 写的字节数计）"},
	{regexp.MustCompile(`^best copy at working sets ≤ (.*) \(the device reports no L2 size\)$`), "工作集 ≤ $1 时最快的拷贝（设备没有报告 L2 大小）"},
	{regexp.MustCompile(`^best cuBLAS bf16 GEMM \(dense\)$`), "最快的 cuBLAS bf16 GEMM（稠密）"},
	{regexp.MustCompile(`^best pinned device-to-host copy$`), "最快的设备到主机拷贝（锁页内存）"},
	{regexp.MustCompile(`^best pinned host-to-device copy$`), "最快的主机到设备拷贝（锁页内存）"},
	{regexp.MustCompile(`^best read of a buffer ≤ the L2 size \((.*)\), every pass in one launch \(bytes read\)$`),
		"读取不超过 L2 大小（$1）的缓冲区时最快的结果，每一遍都在一次启动内完成（按读取的字节数计）"},
	{regexp.MustCompile(`^best read of a buffer ≤ (.*) \(the device reports no L2 size\), every pass in one launch \(bytes read\)$`),
		"读取不超过 $1 的缓冲区时最快的结果（设备没有报告 L2 大小），每一遍都在一次启动内完成（按读取的字节数计）"},
	{regexp.MustCompile(`^launch, run and wait for completion, per launch \(lower is better\)$`), "启动、运行并等待完成，按每次启动计（越低越好）"},
	{regexp.MustCompile(`^time per launch, launches back to back \(lower is better\)$`), "背靠背连续启动时每次启动的时间（越低越好）"},
	{regexp.MustCompile(`^datasheet: (.*), (\S+ \S+) column \((.*), per direction\)$`), "数据手册：$1，$2 一栏（$3，单向）"},
	{regexp.MustCompile(`^datasheet: (.*), (\S+ \S+) column$`), "数据手册：$1，$2 一栏"},
	{regexp.MustCompile(`^no datasheet entry for this device and no figure from its clocks \(see NVML's PCIe generation and width\)$`),
		"数据手册中没有这款设备，也无法由时钟频率算出（见 NVML 给出的 PCIe 代数与链路宽度）"},
	{regexp.MustCompile(`^no datasheet entry for this device and no figure from its clocks$`), "数据手册中没有这款设备，也无法由时钟频率算出"},
	{regexp.MustCompile(`^no published peak \(NVIDIA does not publish L2 bandwidth\); compare with (\S+)$`), "没有公开的峰值（NVIDIA 不公布 L2 带宽）；可与 $1 比较"},
	{regexp.MustCompile(`^no published peak$`), "没有公开的峰值"},
	{regexp.MustCompile(`^the emulator backend has no NVML device \(NVML describes NVIDIA GPUs\)$`), "模拟器后端没有 NVML 设备（NVML 描述的是 NVIDIA GPU）"},
	{regexp.MustCompile(`^NVML describes NVIDIA GPUs; this is the HIP backend \(rocm-smi is its counterpart\)$`), "NVML 描述的是 NVIDIA GPU；这是 HIP 后端（对应的工具是 rocm-smi）"},
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
