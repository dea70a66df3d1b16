"""Scenario pools of the held-out seed suite (``seedheld``): product-spec aspects (with their
official wordings, low-authority claims and questions), complaints, browsing behaviours and
product variant families, English and Chinese side by side. Plain data.

An aspect's ``values`` are ordered pairs (old → new reads naturally for a superseded spec).
"""

from __future__ import annotations

from typing import Any

ASPECTS: list[dict[str, Any]] = [
    {
        "key": "charging_port",
        "values": [["micro-USB", "USB-C"], ["Lightning", "USB-C"], ["micro-USB", "Lightning"]],
        "off_en": [
            "{m} charging input: {v}.",
            "The {m} charges through its {v} port.",
            "Charging on the {m} is via {v}; cable included.",
        ],
        "off_zh": [
            "{m} 充电接口：{v}。",
            "{m} 通过 {v} 接口充电，随附充电线。",
            "{m} 的充电口为 {v}。",
        ],
        "claim_en": [
            "Honestly the {m} charges over {v}, I plug it in every night.",
            "Pretty sure my {m} has a {v} port, works fine.",
        ],
        "claim_zh": ["{m} 就是 {v} 口充电的，我天天用。", "亲测 {m} 用的是 {v} 接口，没问题。"],
        "q_en": [
            "what port does the {m} charge through?",
            "does the {m} charge over {q}?",
            "which cable do I need for charging a {m}?",
        ],
        "q_zh": ["{m} 用什么接口充电？", "{m} 支持 {q} 充电吗？", "给 {m} 充电要用哪种线？"],
    },
    {
        "key": "battery_life",
        "values": [["8", "12"], ["10", "14"], ["20", "30"], ["6", "9"], ["24", "36"]],
        "off_en": [
            "{m} battery life: up to {v} hours.",
            "Rated runtime of the {m}: {v} h on a full charge.",
        ],
        "off_zh": ["{m} 续航：最长 {v} 小时。", "{m} 满电可连续使用 {v} 小时。"],
        "claim_en": [
            "My {m} easily lasts {v} hours on one charge.",
            "Got {v} hours out of the {m} battery, no problem at all.",
        ],
        "claim_zh": ["{m} 一次充满能用 {v} 个小时，没毛病。", "我的 {m} 续航实测 {v} 小时。"],
        "q_en": [
            "how long does the {m} battery last?",
            "does the {m} really run {q} hours?",
            "battery life of the {m}?",
        ],
        "q_zh": ["{m} 续航多久？", "{m} 真能用 {q} 小时吗？", "{m} 电池能撑多长时间？"],
    },
    {
        "key": "warranty",
        "values": [["2", "3"], ["2", "4"], ["3", "5"], ["4", "5"]],
        "off_en": [
            "{m} warranty: {v} years from the date of purchase.",
            "The {m} is covered by a {v}-year manufacturer warranty.",
        ],
        "off_zh": ["{m} 保修期：自购买之日起 {v} 年。", "{m} 享受 {v} 年厂家质保。"],
        "claim_en": [
            "The shop told me the {m} has a {v}-year warranty.",
            "FYI the {m} comes with {v} years of warranty.",
        ],
        "claim_zh": ["店员说 {m} 保修 {v} 年。", "告诉大家 {m} 是 {v} 年质保。"],
        "q_en": [
            "how long is the warranty on the {m}?",
            "is the {m} covered for {q} years?",
            "what warranty does the {m} come with?",
        ],
        "q_zh": ["{m} 保修几年？", "{m} 是 {q} 年质保吗？", "{m} 的质保期多长？"],
    },
    {
        "key": "water_rating",
        "values": [["IPX4", "IP67"], ["IP54", "IP68"], ["IP67", "IP68"], ["IPX5", "IPX7"]],
        "off_en": [
            "{m} water resistance rating: {v}.",
            "The {m} is rated {v} against water and dust.",
        ],
        "off_zh": ["{m} 防水等级：{v}。", "{m} 防尘防水达到 {v}。"],
        "claim_en": [
            "The {m} is {v}, I took it swimming twice.",
            "Mine survived the rain, the {m} is definitely {v}.",
        ],
        "claim_zh": ["{m} 是 {v}，我戴着游过泳。", "淋了雨也没事，{m} 肯定是 {v}。"],
        "q_en": [
            "what's the water rating of the {m}?",
            "is the {m} rated {q}?",
            "how water resistant is the {m}?",
        ],
        "q_zh": ["{m} 防水等级是多少？", "{m} 是 {q} 防水吗？", "{m} 防水怎么样？"],
    },
    {
        "key": "charge_power",
        "values": [["18", "25"], ["25", "45"], ["45", "65"], ["30", "67"]],
        "off_en": [
            "{m} maximum charging power: {v} W.",
            "The {m} fast-charges at up to {v} watts.",
        ],
        "off_zh": ["{m} 最大充电功率 {v}W。", "{m} 支持最高 {v} 瓦快充。"],
        "claim_en": [
            "The {m} pulls {v} W from my charger, super quick.",
            "Measured it myself: {m} charges at {v} W.",
        ],
        "claim_zh": ["{m} 实测 {v}W 快充，很快。", "我用功率计测了，{m} 是 {v} 瓦。"],
        "q_en": [
            "how fast does the {m} charge?",
            "does the {m} support {q} W charging?",
            "what's the max charging wattage of the {m}?",
        ],
        "q_zh": ["{m} 支持多少瓦快充？", "{m} 能 {q}W 快充吗？", "{m} 充电功率最大多少？"],
    },
    {
        "key": "weight",
        "values": [["245", "210"], ["300", "265"], ["180", "165"], ["520", "480"]],
        "off_en": ["{m} weight: {v} g.", "The {m} weighs {v} grams."],
        "off_zh": ["{m} 重量：{v} 克。", "{m} 整机重 {v} 克。"],
        "claim_en": [
            "Weighed my {m} on a kitchen scale: {v} g.",
            "The {m} is {v} grams, feels light.",
        ],
        "claim_zh": ["用厨房秤称了，{m} 是 {v} 克。", "{m} 才 {v} 克，很轻。"],
        "q_en": ["how heavy is the {m}?", "is the {m} {q} grams?", "what does the {m} weigh?"],
        "q_zh": ["{m} 有多重？", "{m} 是 {q} 克吗？", "{m} 重量多少？"],
    },
    {
        "key": "refresh_rate",
        "values": [["60", "144"], ["144", "165"], ["120", "240"], ["75", "144"]],
        "off_en": ["{m} panel refresh rate: {v} Hz.", "The {m} display runs at {v} Hz."],
        "off_zh": ["{m} 屏幕刷新率：{v}Hz。", "{m} 面板刷新率为 {v} 赫兹。"],
        "claim_en": [
            "Overclocked nothing, my {m} does {v} Hz out of the box.",
            "The {m} is a {v} Hz panel.",
        ],
        "claim_zh": ["{m} 开箱就是 {v}Hz。", "{m} 是 {v} 赫兹的屏。"],
        "q_en": [
            "what refresh rate does the {m} have?",
            "is the {m} {q} Hz?",
            "how many Hz is the {m}?",
        ],
        "q_zh": ["{m} 刷新率多少？", "{m} 是 {q}Hz 的吗？", "{m} 屏幕多少赫兹？"],
    },
]


COMPLAINTS: list[
    tuple[str, str, str, str, str, str]
] = [  # (product en, zh, resolved en, resolved zh, open en, open zh)
    (
        "charger",
        "充电器",
        "Charger overheating reported; unit replaced and the problem is solved.",
        "反馈充电器发热，已换新，问题已解决。",
        "Charger overheating during use; batch defect confirmed, recall in progress.",
        "充电器使用中发热，确认为批次问题，召回处理中。",
    ),
    (
        "washing machine",
        "洗衣机",
        "Washing machine drum noise; technician adjusted the bearing, ticket closed.",
        "洗衣机滚筒异响，师傅已调整轴承，工单关闭。",
        "Washing machine leaking at the door seal; replacement seal on order, visit not yet "
        "booked.",
        "洗衣机门封漏水，密封圈在订货中，尚未安排上门。",
    ),
    (
        "router",
        "路由器",
        "Router dropping Wi-Fi; firmware update fixed it, customer confirmed.",
        "路由器频繁断网，升级固件后恢复，客户已确认。",
        "Router dropping Wi-Fi every evening on the latest firmware; escalated to engineering.",
        "最新固件下路由器每晚断网，已升级至研发处理。",
    ),
    (
        "coffee machine",
        "咖啡机",
        "Coffee machine pump weak; descaled over a video call, resolved.",
        "咖啡机出水无力，视频指导除垢后已解决。",
        "Coffee machine pump stopped completely; waiting for courier pickup to repair.",
        "咖啡机水泵完全不工作，等待快递上门取件维修。",
    ),
    (
        "e-bike",
        "电动自行车",
        "E-bike battery not charging; charger swapped, fixed.",
        "电动自行车电池充不进电，更换充电器后修复。",
        "E-bike battery swelling reported; safety review pending, do not ride.",
        "电动自行车电池鼓包，安全评估中，暂勿骑行。",
    ),
    (
        "laptop",
        "笔记本电脑",
        "Laptop keyboard keys sticking; keyboard replaced under warranty, closed.",
        "笔记本键盘按键卡住，已保修更换键盘，结单。",
        "Laptop screen flickering; replacement panel backordered, customer waiting.",
        "笔记本屏幕闪烁，替换屏幕缺货，客户等待中。",
    ),
    (
        "dishwasher",
        "洗碗机",
        "Dishwasher not draining; filter cleaned remotely, working again.",
        "洗碗机不排水，远程指导清洗滤网后恢复正常。",
        "Dishwasher shows error E24; technician visit still to be scheduled.",
        "洗碗机报E24故障，上门时间尚待安排。",
    ),
]


BEHAVIOUR: list[
    dict[str, Any]
] = [  # category en, zh, feature en, zh, (old product note en/zh), (new product)
    {
        "cat_en": ["headphones", "wireless headphones", "earbuds"],
        "cat_zh": ["蓝牙耳机", "耳机", "无线耳机"],
        "feat_en": "noise cancelling",
        "feat_zh": "降噪",
        "old_en": "no active noise cancelling",
        "old_zh": "无主动降噪",
        "new_en": "adaptive noise cancelling",
        "new_zh": "自适应主动降噪",
    },
    {
        "cat_en": ["robot vacuum", "robot vacuum cleaner"],
        "cat_zh": ["扫地机器人", "扫地机"],
        "feat_en": "mopping",
        "feat_zh": "拖地",
        "old_en": "vacuum only, no mopping pad",
        "old_zh": "仅扫地，不带拖地",
        "new_en": "vacuum plus rotating mop",
        "new_zh": "扫拖一体，旋转拖布",
    },
    {
        "cat_en": ["smartwatch", "fitness watch"],
        "cat_zh": ["智能手表", "运动手表"],
        "feat_en": "GPS",
        "feat_zh": "GPS",
        "old_en": "no built-in GPS (uses the phone)",
        "old_zh": "无内置GPS，需连手机",
        "new_en": "dual-band built-in GPS",
        "new_zh": "内置双频GPS",
    },
    {
        "cat_en": ["air purifier"],
        "cat_zh": ["空气净化器", "净化器"],
        "feat_en": "a HEPA filter",
        "feat_zh": "HEPA滤网",
        "old_en": "ionizer only, no HEPA filter",
        "old_zh": "仅负离子，无HEPA滤网",
        "new_en": "H13 HEPA filter",
        "new_zh": "H13级HEPA滤网",
    },
    {
        "cat_en": ["e-reader"],
        "cat_zh": ["电子书阅读器", "电纸书"],
        "feat_en": "a front light",
        "feat_zh": "阅读灯",
        "old_en": "no front light",
        "old_zh": "无前光阅读灯",
        "new_en": "warm front light",
        "new_zh": "冷暖双色阅读灯",
    },
    {
        "cat_en": ["tent", "camping tent"],
        "cat_zh": ["帐篷", "露营帐篷"],
        "feat_en": "a rain fly",
        "feat_zh": "防雨外帐",
        "old_en": "single wall, no rain fly",
        "old_zh": "单层，无防雨外帐",
        "new_en": "double wall with full rain fly",
        "new_zh": "双层带全覆盖防雨外帐",
    },
]


OTHER_VIEWS = {
    "en": ["electric kettle", "rain jacket", "standing desk", "blender", "phone case"],
    "zh": ["电热水壶", "冲锋衣", "升降桌", "破壁机", "手机壳"],
}


VARIANT_FAMILIES: list[dict[str, Any]] = [
    {
        "name_en": "power bank",
        "name_zh": "充电宝",
        "attrs": [
            ("colour", ["black", "white", "blue", "green"], ["黑色", "白色", "蓝色", "绿色"]),
            ("capacity", ["10000mAh", "20000mAh", "30000mAh"], None),
            ("port", ["USB-C", "Lightning", "micro-USB"], None),
        ],
    },
    {
        "name_en": "phone",
        "name_zh": "手机",
        "attrs": [
            ("colour", ["black", "silver", "purple", "gold"], ["黑色", "银色", "紫色", "金色"]),
            ("storage", ["128GB", "256GB", "512GB"], None),
            ("memory", ["8GB RAM", "12GB RAM", "16GB RAM"], ["8G内存", "12G内存", "16G内存"]),
        ],
    },
    {
        "name_en": "kettle",
        "name_zh": "电水壶",
        "attrs": [
            ("capacity", ["1.2 L", "1.5 L", "1.7 L"], ["1.2升", "1.5升", "1.7升"]),
            ("colour", ["cream", "black", "sage"], ["奶白色", "黑色", "鼠尾草绿"]),
            ("body", ["glass", "stainless steel"], ["玻璃", "不锈钢"]),
        ],
    },
    {
        "name_en": "monitor",
        "name_zh": "显示器",
        "attrs": [
            ("size", ["24-inch", "27-inch", "32-inch"], ["24英寸", "27英寸", "32英寸"]),
            ("refresh", ["60Hz", "144Hz", "165Hz"], None),
            ("panel", ["IPS", "VA", "OLED"], None),
        ],
    },
    {
        "name_en": "running shoe",
        "name_zh": "跑鞋",
        "attrs": [
            ("size", ["EU 40", "EU 41", "EU 42", "EU 43"], ["40码", "41码", "42码", "43码"]),
            ("colour", ["orange", "black", "white"], ["橙色", "黑色", "白色"]),
            ("width", ["regular", "wide"], ["标准楦", "宽楦"]),
        ],
    },
    {
        "name_en": "laptop",
        "name_zh": "笔记本电脑",
        "attrs": [
            ("memory", ["16GB", "32GB"], None),
            ("ssd", ["512GB SSD", "1TB SSD", "2TB SSD"], ["512G固态", "1T固态", "2T固态"]),
            ("colour", ["space grey", "silver", "midnight"], ["深空灰", "银色", "午夜色"]),
        ],
    },
]
