package site

import "fmt"

// Langs are the course's languages, in the order the site lists them.
var Langs = []string{"en", "zh"}

func otherLang(l string) string {
	if l == "zh" {
		return "en"
	}
	return "zh"
}

// htmlLang is the value of <html lang>.
func htmlLang(l string) string {
	if l == "zh" {
		return "zh-CN"
	}
	return "en"
}

// ui holds the site's interface strings.
var ui = map[string]map[string]string{
	"en": {
		"course":         "Kernel Labs",
		"site":           "Site",
		"chapters":       "Chapters",
		"devices":        "Devices",
		"device":         "Device",
		"howtorun":       "How to run",
		"otherlang":      "中文",
		"inprep":         "in preparation",
		"prev":           "Previous",
		"next":           "Next",
		"lab":            "Lab",
		"footer":         "a bilingual course on writing fast GPU kernels",
		"headline":       "Headline results",
		"noresultsyet":   "No results recorded yet: run the lab (labrun NN) on a device and rebuild the site.",
		"nodevices":      "No device has recorded results yet.",
		"emulatedshort":  "emulated",
		"emulatedlong":   "emulated, not a performance figure",
		"emulatednote":   "Emulated, not a performance figure: the CPU emulator checks correctness; its times say nothing about a GPU.",
		"ceilings":       "Measured ceilings",
		"properties":     "Device properties",
		"attributes":     "All device attributes",
		"nvml":           "NVML",
		"resultsbylab":   "Results by lab",
		"devicesintro":   "Every device that has recorded results. Each page shows the device's properties and measured ceilings (from lab 01) and its results in every lab.",
		"arch":           "Architecture",
		"backend":        "Backend",
		"labsrun":        "Labs with results",
		"variant":        "Variant",
		"problem":        "Problem",
		"median":         "Median (min–max)",
		"rate":           "Rate",
		"vsbaseline":     "vs baseline",
		"status":         "Status",
		"check":          "Check (rel. error)",
		"time":           "Time",
		"baseline":       "baseline",
		"noresults":      "No results for this suite yet: run `labrun %s` on a device and rebuild the site.",
		"noprops":        "No device has recorded its properties yet: run `labrun 01` on a device and rebuild the site.",
		"noceilings":     "No device has measured its ceilings yet: run `labrun 01` on a device and rebuild the site.",
		"ceiling":        "Ceiling",
		"measured":       "Measured",
		"peak":           "Peak",
		"colon":          ": ",
		"someproblems":   " The %d heaviest of its %d problems; every problem is in the details.",
		"listsep":        "; ",
		"listcomma":      ", ",
		"noplotdata":     "no correct results to plot",
		"ofpeak":         "% of peak",
		"source":         "How it was measured",
		"property":       "Property",
		"value":          "Value",
		"unit":           "Unit",
		"name":           "Name",
		"speedupx":       "speedup over %s (×)",
		"speeduptitle":   "%s: speedup over the baseline (%s)",
		"throughput":     "%s: %s against problem size",
		"roofline":       "%s: roofline",
		"intensity":      "arithmetic intensity (FLOP/byte)",
		"achieved":       "achieved TFLOP/s",
		"perop_us":       "time per operation (µs)",
		"timelinetitle":  "%s: which SM ran which tile, when",
		"timelinex":      "time since the first tile started (µs)",
		"timeliney":      "SM",
		"timelinepanel":  "%s: %s, %d launch(es), %d tiles",
		"timelinegroup":  "group %d",
		"notimeline":     "no timeline recorded for %s (variants with timeline: 1 record one)",
		"problemsize":    "problem size (%s)",
		"measuredroof":   "measured",
		"peakroof":       "peak",
		"plotalt":        "Plot: %s on %s",
		"ranon":          "run %s · %s %s",
		"checksok":       "%d of %d checks correct (correctness only)",
		"best":           "%s: %s %s at %s",
		"bestvs":         ", %.2f× %s in the same run",
		"devname":        "Name",
		"worldsize":      "Ranks (one process per GPU)",
		"ranksmeta":      "%d ranks, one GPU each",
		"cc":             "Compute capability",
		"sms":            "SMs",
		"memory":         "Memory",
		"l2":             "L2 cache",
		"clocks":         "SM / memory clock",
		"buswidth":       "Memory bus",
		"driver":         "Driver (CUDA API)",
		"runtime":        "Toolkit / runtime",
		"toolchain":      "Compiler",
		"lastrun":        "Latest run",
		"limits":         "Block limits",
		"slug":           "Results folder",
		"statusok":       "ok",
		"peercheck":      "checked by the peer's reference",
		"powercapped":    "power-capped %.0f%% of its timing",
		"part_memory":    "Memory now",
		"part_peaks":     "Peak figures (datasheet and from clocks)",
		"part_nvml":      "NVML",
		"repo":           "the course's code",
		"alldetails":     "Every figure: median with min–max, rates, speedups, errors",
		"keyspeedup":     "Speedup over %s, the suite's baseline, measured in the same run; the baseline shows its own rate.",
		"keyrate":        "The rate of each run.",
		"keyemu":         "The check's relative error ‖out − ref‖ / ‖ref‖ on the CPU emulator, which checks correctness only.",
		"skippedhere":    "Skipped on this device:",
		"skipsep":        ": ",
		"skipjoin":       "; ",
		"status_ok":      "ok",
		"status_wrong":   "wrong",
		"status_failed":  "failed",
		"status_crashed": "crashed",
		"status_timeout": "timeout",
		"status_skipped": "skipped",

		// Timelines whose records have kinds (lab 05's): what each SM ran, coloured by kind.
		"timelinekindtitle":    "%s: what each SM ran, when",
		"timelinekindx":        "time since the first record began (µs)",
		"timelinekindpanel":    "%s: %s, %d launch(es), %d records",
		"timelinekind:compute": "GEMM tile",
		"timelinekind:copy":    "copy of a block of rows",
		"timelinekind:wait":    "wait for a ready flag",
	},
	"zh": {
		"course":         "算子实验室",
		"site":           "网站",
		"chapters":       "章节",
		"devices":        "设备",
		"device":         "设备",
		"howtorun":       "如何运行",
		"otherlang":      "English",
		"inprep":         "编写中",
		"prev":           "上一章",
		"next":           "下一章",
		"lab":            "实验",
		"footer":         "中英双语的 GPU 高性能算子课程",
		"headline":       "主要结果",
		"noresultsyet":   "尚无记录的结果：在设备上运行该实验（labrun NN）后重新生成网站。",
		"nodevices":      "还没有设备记录过结果。",
		"emulatedshort":  "模拟",
		"emulatedlong":   "模拟结果，不代表性能",
		"emulatednote":   "模拟结果，不代表性能：CPU 模拟器只检查正确性，它的时间与 GPU 无关。",
		"ceilings":       "实测上限",
		"properties":     "设备属性",
		"attributes":     "全部设备属性",
		"nvml":           "NVML",
		"resultsbylab":   "各实验结果",
		"devicesintro":   "所有记录过结果的设备。每个设备页给出该设备的属性和实测上限（来自实验 01），以及它在各个实验中的结果。",
		"arch":           "架构",
		"backend":        "后端",
		"labsrun":        "有结果的实验",
		"variant":        "变体",
		"problem":        "问题",
		"median":         "中位时间（最小–最大）",
		"rate":           "速率",
		"vsbaseline":     "相对基线",
		"status":         "状态",
		"check":          "检查（相对误差）",
		"time":           "时间",
		"baseline":       "基线",
		"noresults":      "该测试组还没有结果：在设备上运行 `labrun %s` 后重新生成网站。",
		"noprops":        "还没有设备记录过属性：在设备上运行 `labrun 01` 后重新生成网站。",
		"noceilings":     "还没有设备测过上限：在设备上运行 `labrun 01` 后重新生成网站。",
		"ceiling":        "上限",
		"measured":       "实测",
		"peak":           "峰值",
		"colon":          "：",
		"someproblems":   "表中只列出 %[2]d 个问题中最重的 %[1]d 个，全部问题见详细数据。",
		"listsep":        "；",
		"listcomma":      "、",
		"noplotdata":     "没有可以作图的正确结果",
		"ofpeak":         "占峰值",
		"source":         "测量方法",
		"property":       "属性",
		"value":          "值",
		"unit":           "单位",
		"name":           "名称",
		"speedupx":       "相对 %s 的加速比（倍）",
		"speeduptitle":   "%s：相对基线（%s）的加速比",
		"throughput":     "%s：%s 随问题规模的变化",
		"roofline":       "%s：屋顶线模型",
		"intensity":      "算术强度（FLOP/字节）",
		"achieved":       "实际达到的 TFLOP/s",
		"perop_us":       "每次操作的时间（微秒）",
		"timelinetitle":  "%s：哪个 SM 在何时运行了哪个分块",
		"timelinex":      "自第一个分块开始的时间（微秒）",
		"timeliney":      "SM",
		"timelinepanel":  "%s：%s，%d 次启动，%d 个分块",
		"timelinegroup":  "第 %d 组",
		"notimeline":     "%s 没有记录时间线（timeline: 1 的变体才会记录）",
		"problemsize":    "问题规模（%s）",
		"measuredroof":   "实测",
		"peakroof":       "峰值",
		"plotalt":        "图：%s，设备 %s",
		"ranon":          "运行于 %s · %s %s",
		"checksok":       "%d / %d 项检查正确（仅验证正确性）",
		"best":           "%s：%s 在 %[4]s 上为 %[3]s",
		"bestvs":         "，是同一次运行中 %[2]s 的 %.2[1]f 倍",
		"devname":        "名称",
		"worldsize":      "rank 数（每个 GPU 一个进程）",
		"ranksmeta":      "%d 个 rank，每个一块 GPU",
		"cc":             "计算能力",
		"sms":            "SM 数量",
		"memory":         "显存",
		"l2":             "L2 缓存",
		"clocks":         "SM / 显存时钟",
		"buswidth":       "显存位宽",
		"driver":         "驱动（CUDA API）",
		"runtime":        "工具链 / 运行时",
		"toolchain":      "编译器",
		"lastrun":        "最近一次运行",
		"limits":         "线程块限制",
		"slug":           "结果目录",
		"statusok":       "正确",
		"peercheck":      "由对照实现自己的参考结果校验",
		"powercapped":    "计时期间 %.0f%% 的时间受功耗上限限制",
		"part_memory":    "当前显存",
		"part_peaks":     "峰值（数据手册与按时钟推算）",
		"part_nvml":      "NVML",
		"repo":           "课程代码",
		"alldetails":     "全部数据：中位时间及最小–最大值、速率、加速比、错误信息",
		"keyspeedup":     "相对本组基线 %s 的加速比，在同一次运行中测得；基线本身给出的是它的速率。",
		"keyrate":        "每次运行的速率。",
		"keyemu":         "CPU 模拟器上检查的相对误差 ‖out − ref‖ / ‖ref‖；模拟器只检查正确性。",
		"skippedhere":    "在该设备上跳过：",
		"skipsep":        "：",
		"skipjoin":       "；",
		"status_ok":      "正确",
		"status_wrong":   "结果错误",
		"status_failed":  "失败",
		"status_crashed": "崩溃",
		"status_timeout": "超时",
		"status_skipped": "跳过",

		"timelinekindtitle":    "%s：各 SM 在何时运行了什么",
		"timelinekindx":        "自第一条记录开始的时间（微秒）",
		"timelinekindpanel":    "%s：%s，%d 次启动，%d 条记录",
		"timelinekind:compute": "GEMM 分块",
		"timelinekind:copy":    "行块拷贝",
		"timelinekind:wait":    "等待就绪标志",
	},
}

// tr returns the interface string key in lang, formatted with args when given.
func tr(lang, key string, args ...any) string {
	s, ok := ui[lang][key]
	if !ok {
		s = ui["en"][key]
	}
	if s == "" {
		s = key
	}
	if len(args) > 0 {
		s = fmt.Sprintf(s, args...)
		if lang == "zh" {
			// The Chinese texts space their arguments as Latin ("在 GPU 上"); an argument in
			// Chinese (a problem's title) needs no space.
			s = joinCJKText(s)
		}
	}
	return s
}

// ceilingNames names the known ceilings; unknown keys are shown as they are.
var ceilingNames = map[string][2]string{
	"hbm_gbps":       {"HBM bandwidth", "HBM 带宽"},
	"l2_gbps":        {"L2 bandwidth", "L2 带宽"},
	"fp32_tflops":    {"FP32 FMA rate", "FP32 FMA 算力"},
	"bf16_tflops":    {"BF16 tensor-core rate", "BF16 Tensor Core 算力"},
	"fp16_tflops":    {"FP16 tensor-core rate", "FP16 Tensor Core 算力"},
	"tf32_tflops":    {"TF32 tensor-core rate", "TF32 Tensor Core 算力"},
	"launch_us":      {"Kernel launch (back to back)", "内核启动（连续启动）"},
	"launch_sync_us": {"Kernel launch and wait", "内核启动并等待完成"},
	"h2d_gbps":       {"Host → device copy", "主机 → 设备拷贝"},
	"d2h_gbps":       {"Device → host copy", "设备 → 主机拷贝"},
}

func ceilingName(lang, key string) string {
	if n, ok := ceilingNames[key]; ok {
		if lang == "zh" {
			return n[1]
		}
		return n[0]
	}
	return key
}
