// @ts-check
// The UI's words in zh-CN and English. The browser's first language picks one (Chinese for
// zh-*, English otherwise) until the user switches; the choice is kept in localStorage and
// sent to the server as Accept-Language so its messages match.

const STORE_KEY = "youyou.lang";

const MESSAGES = {
  "zh-CN": {
    appTitle: "YouYou 值班工作台",
    tagline: "值班工程师的运维助手",
    language: "语言 / Language",
    signIn: "登录", register: "注册账号", createAccount: "创建账号并登录",
    needAccount: "还没有账号？注册", haveAccount: "已有账号？登录",
    signInWith: "使用 {name} 登录", sso: "单点登录",
    ssoRefused: "登录服务未完成本次登录（{reason}），请重新登录。",
    username: "用户名", password: "密码",
    registerHint: "用户名可用字母、数字和 _ . @ -；密码至少 {min} 个字符，不能是常见密码或接近用户名。",
    signOut: "退出登录", signOutEverywhere: "在所有设备上退出", signedInAs: "当前用户", retry: "重试",
    mainNav: "主导航", chat: "对话", configuration: "配置", memories: "长期记忆",
    sessions: "会话", newSession: "新建会话", searchSessions: "搜索会话",
    searchPlaceholder: "搜索标题、ID 或消息内容（Ctrl+K）", loading: "加载中…",
    noSessions: "还没有会话。", noMatches: "没有匹配的会话。", running: "正在回答",
    untitled: "未命名会话", title: "标题", model: "模型", modelOption: "{name}（上下文 {window} tokens）", create: "创建", cancel: "取消",
    welcome: "欢迎", noSessionOpen: "打开或新建一个会话",
    emptyHint: "从左侧选择会话，或新建一个会话并选择模型。",
    "key.Enter": "发送", "key.Shift+Enter": "换行", "key./": "在开头输入，选择 Skill",
    "key.Esc": "停止正在生成的回答", "key.Ctrl+K": "搜索会话", "key.Alt+N": "新建会话",
    conversation: "对话内容", emptyConversation: "还没有消息。在下方输入问题开始。",
    contextUsage: "上下文用量", usage: "{tokens} / {window} tokens · {percent}%",
    memoryMode: "记忆模式", "mode.every_30_turns": "每 {turns} 轮压缩",
    "mode.context_70_percent": "上下文达 {percent}% 时压缩", "mode.manual": "手动压缩",
    modeSaved: "记忆模式已切换为：{mode}",
    compact: "压缩", compactNow: "立即压缩", compacting: "压缩中…", compactedDone: "会话记忆已压缩。",
    contextFull: "上下文已用 {percent}%，已暂停发送。请先压缩会话记忆再继续。",
    compacted: "已压缩", compactedSummary: "之前的 {count} 条消息已压缩为摘要（展开查看）",
    reconnecting: "连接中断，正在重新连接…",
    waitingForModel: "等待模型响应… {seconds} 秒",
    you: "你", yourMessage: "你的消息", assistant: "YouYou", assistantMessage: "助手回答",
    assistantIncomplete: "助手回答（不完整）", incomplete: "回答不完整",
    system: "系统", systemMessage: "系统消息",
    reasoning: "推理过程", toolCall: "工具调用 {name}", toolRunning: "执行中…",
    toolDone: "完成", toolFailed: "失败", toolNoResult: "无结果", duration: "{ms} ms",
    tokenUsage: "输入 {input} · 输出 {output} tokens", tokenCost: "费用 {cost}",
    arguments: "参数", output: "输出", code: "代码", copy: "复制", copied: "已复制",
    copyCode: "复制代码", attachedImage: "附带的图片", attachedText: "附带的文本",
    composer: "输入消息", message: "消息",
    messagePlaceholder: "描述现象或提问…（Enter 发送，Shift+Enter 换行，开头输入 / 选择 Skill）",
    composerHint: "可粘贴或拖入图片、附加文本文件", send: "发送", stop: "停止（Esc）", stopping: "正在停止…",
    attachFile: "附加文件", attachments: "附件", removeAttachment: "移除附件 {name}",
    pastedImage: "粘贴的图片", skills: "Skills",
    noSkillMatches: "没有匹配的 Skill。", noSkillsSelected: "还没有选择 Skill，请在「配置」页选择。",
    tooManyAttachments: "一条消息最多 {max} 个附件。",
    imageType: "{name}：只支持 PNG、JPEG、GIF 和 WebP 图片。",
    noVision: "当前会话的模型 {model} 不支持图片。",
    noTools: "此模型不支持工具",
    tooLarge: "{name} 超过 {max}，未附加。",
    fileType: "{name}：只能附加图片和文本文件。",
    notUtf8: "{name} 不是 UTF-8 文本文件，未附加。",
    prompts: "提示词", newPrompt: "新建提示词", activePrompt: "当前使用的提示词",
    promptsHint: "提示词是你的偏好，附加在工作台固定规则之后。",
    default: "默认", edit: "编辑", delete: "删除", save: "保存", close: "关闭", view: "查看",
    editPrompt: "编辑提示词 {name}", deletePrompt: "删除提示词 {name}",
    deletePromptConfirm: "删除后无法恢复。若它正被使用，将改用默认提示词。",
    promptLabel: "名称", promptContent: "内容", promptSaved: "提示词已保存。",
    skillsHint: "上传 SKILL.md（YAML frontmatter 含 name 和 description）。选中的 Skill 可用 /name 调用。",
    skillDropzone: "上传 SKILL.md", dropSkill: "把 SKILL.md 拖到这里，或", chooseSkill: "选择 SKILL.md 文件",
    activeSkills: "当前会话可用的 Skill", noSkills: "还没有 Skill。",
    viewSkill: "查看 {name} 的 SKILL.md", deleteSkill: "删除 Skill {name}",
    deleteSkillConfirm: "删除后无法恢复，它也会从当前选择中移除。",
    skillFile: "{name} 的 SKILL.md", skillRefused: "{name} 未通过校验：",
    failedRules: "{name} 未通过的规则", skillTooLarge: "Skill 文件不能超过 {max}。",
    skillsAdded: "已上传 {count} 个 Skill。",
    saveSelection: "保存选择", selectionSaved: "选择已保存。", unsaved: "有未保存的更改",
    memoriesHint: "助手从对话中记住的长期事实。删除后，之后的会话不会再用到它。",
    noMemories: "还没有长期记忆。", fromSession: "来自会话", fromDeletedSession: "来自已删除的会话 {id}",
    updated: "更新于 {time}", deleteMemory: "删除记忆：{name}",
    deleteMemoryConfirm: "删除后助手将不再记得这条内容。", memoryDeleted: "记忆已删除。",
    dismiss: "关闭提示",
    serverUnreachable: "无法连接服务器。",
    passwordTooShort: "密码至少需要 {min} 个字符。", defaultPromptName: "默认提示词",
    contextLimitRefused: "上下文已满，消息未发送（已放回输入框）。请先压缩会话记忆，或缩短消息后再发送。",
    unreachableBanner: "无法连接服务器，正在重试…草稿已保留，连接恢复后即可发送。",
    backBanner: "已重新连接到服务器。",
    runningElsewhere: "这个回答由另一个标签页或设备发起，正在生成；你也可以在这里停止它。",
    turnBusy: "该会话已有回答正在生成，已切换为跟随它。",
    openSessions: "会话列表", accountMenu: "账户菜单",
    fileNumber: "第 {n} 个文件 {name}",
    imageLink: "图片：{alt}",
    leaveTitle: "离开此页？", leaveBody: "当前提示词和 Skill 的选择尚未保存，离开后将丢失。", leave: "离开", stay: "留下",
    copyFailed: "无法复制，请手动选择文本。",
    copyAnswer: "复制为 Markdown", retryAnswer: "重试", editResend: "编辑后重发",
    sessionActions: "会话操作", rename: "重命名", renameSession: "重命名会话",
    exportMarkdown: "导出 Markdown", exportJson: "导出 JSON",
    usageTitle: "用量", usageTable: "各账号用量", usagePeriod: "用量的日期范围",
    usageHint: "各账号已完成轮次的 token 数，以及配置了模型价格时的费用。日期按本机时区计算，包含起止两天；留空表示不限。",
    usageFrom: "起始日期", usageTo: "截止日期", usageShow: "显示",
    usageAccount: "账号", usageTurns: "轮次", usageInput: "输入 tokens", usageOutput: "输出 tokens",
    usageCost: "费用", usageTotal: "全部账号",
    deleteSession: "删除会话", deleteSessionConfirm: "将删除「{title}」及其全部消息，无法恢复。",
    sessionDeleted: "会话已删除。", sessionRenamed: "会话已重命名。",
  },
  en: {
    appTitle: "YouYou on-call workbench",
    tagline: "The operations assistant for on-call engineers",
    language: "语言 / Language",
    signIn: "Sign in", register: "Create an account", createAccount: "Create account and sign in",
    needAccount: "No account yet? Register", haveAccount: "Have an account? Sign in",
    signInWith: "Sign in with {name}", sso: "SSO",
    ssoRefused: "The sign-in provider did not complete the sign-in ({reason}); sign in again.",
    username: "Username", password: "Password",
    registerHint: "Usernames use letters, digits and _ . @ -; passwords have at least {min} characters and are neither a common password nor close to the username.",
    signOut: "Sign out", signOutEverywhere: "Sign out everywhere", signedInAs: "Signed in as", retry: "Retry",
    mainNav: "Main", chat: "Chat", configuration: "Configuration", memories: "Memories",
    sessions: "Sessions", newSession: "New session", searchSessions: "Search sessions",
    searchPlaceholder: "Search titles, ids and messages (Ctrl+K)", loading: "Loading…",
    noSessions: "No sessions yet.", noMatches: "No matching sessions.", running: "Answering",
    untitled: "Untitled session", title: "Title", model: "Model", modelOption: "{name} ({window}-token context)", create: "Create", cancel: "Cancel",
    welcome: "Welcome", noSessionOpen: "Open or start a session",
    emptyHint: "Pick a session on the left, or start a new one and choose its model.",
    "key.Enter": "Send", "key.Shift+Enter": "New line", "key./": "At the start: pick a skill",
    "key.Esc": "Stop the answer being written", "key.Ctrl+K": "Search sessions", "key.Alt+N": "New session",
    conversation: "Conversation", emptyConversation: "No messages yet. Ask below to start.",
    contextUsage: "Context usage", usage: "{tokens} / {window} tokens · {percent}%",
    memoryMode: "Memory mode", "mode.every_30_turns": "Every {turns} turns",
    "mode.context_70_percent": "At {percent}% of the context", "mode.manual": "Manual",
    modeSaved: "Memory mode is now: {mode}",
    compact: "Compact", compactNow: "Compact now", compacting: "Compacting…", compactedDone: "The session memory was compacted.",
    contextFull: "The context is {percent}% full, so sending is paused. Compact the session memory to continue.",
    compacted: "Compacted", compactedSummary: "The {count} earlier messages were compacted into a summary (expand to read)",
    reconnecting: "Connection lost, reconnecting…",
    waitingForModel: "Waiting for the model… {seconds} s",
    you: "You", yourMessage: "Your message", assistant: "YouYou", assistantMessage: "Assistant answer",
    assistantIncomplete: "Assistant answer (incomplete)", incomplete: "Incomplete answer",
    system: "System", systemMessage: "System message",
    reasoning: "Reasoning", toolCall: "Tool call {name}", toolRunning: "running…",
    toolDone: "done", toolFailed: "failed", toolNoResult: "no result", duration: "{ms} ms",
    tokenUsage: "{input} in · {output} out tokens", tokenCost: "cost {cost}",
    arguments: "Arguments", output: "Output", code: "code", copy: "Copy", copied: "Copied",
    copyCode: "Copy code", attachedImage: "Attached image", attachedText: "Attached text",
    composer: "Write a message", message: "Message",
    messagePlaceholder: "Describe what you see or ask… (Enter sends, Shift+Enter new line, / at the start for skills)",
    composerHint: "Paste or drop images, attach text files", send: "Send", stop: "Stop (Esc)", stopping: "Stopping…",
    attachFile: "Attach file", attachments: "Attachments", removeAttachment: "Remove attachment {name}",
    pastedImage: "pasted image", skills: "Skills",
    noSkillMatches: "No skill matches.", noSkillsSelected: "No skills selected yet: choose them on the Configuration page.",
    tooManyAttachments: "A message takes at most {max} attachments.",
    imageType: "{name}: only PNG, JPEG, GIF and WebP images are supported.",
    noVision: "The model of this session, {model}, does not accept images.",
    noTools: "tools unavailable with this model",
    tooLarge: "{name} is larger than {max}; not attached.",
    fileType: "{name}: only images and text files can be attached.",
    notUtf8: "{name} is not a UTF-8 text file; not attached.",
    prompts: "Prompts", newPrompt: "New prompt", activePrompt: "Active prompt",
    promptsHint: "A prompt is your preference, added after the workbench's fixed rules.",
    default: "Default", edit: "Edit", delete: "Delete", save: "Save", close: "Close", view: "View",
    editPrompt: "Edit prompt {name}", deletePrompt: "Delete prompt {name}",
    deletePromptConfirm: "This cannot be undone. If the prompt is in use, the default prompt takes over.",
    promptLabel: "Name", promptContent: "Content", promptSaved: "Prompt saved.",
    skillsHint: "Upload SKILL.md files (YAML frontmatter with name and description). Selected skills can be called with /name.",
    skillDropzone: "Upload SKILL.md", dropSkill: "Drop SKILL.md files here, or", chooseSkill: "Choose SKILL.md file",
    activeSkills: "Skills available in chats", noSkills: "No skills yet.",
    viewSkill: "View SKILL.md of {name}", deleteSkill: "Delete skill {name}",
    deleteSkillConfirm: "This cannot be undone; the skill is also removed from your selection.",
    skillFile: "SKILL.md of {name}", skillRefused: "{name} was refused:",
    failedRules: "Rules {name} fails", skillTooLarge: "The skill file must not exceed {max}.",
    skillsAdded: "{count} skill(s) uploaded.",
    saveSelection: "Save selection", selectionSaved: "Selection saved.", unsaved: "Unsaved changes",
    memoriesHint: "Long-lived facts the assistant remembered from your conversations. Delete one and later sessions no longer use it.",
    noMemories: "No long-term memories yet.", fromSession: "From session", fromDeletedSession: "From deleted session {id}",
    updated: "updated {time}", deleteMemory: "Delete memory: {name}",
    deleteMemoryConfirm: "The assistant will no longer remember this.", memoryDeleted: "Memory deleted.",
    dismiss: "Dismiss",
    serverUnreachable: "The server cannot be reached.",
    passwordTooShort: "The password needs at least {min} characters.", defaultPromptName: "Default prompt",
    contextLimitRefused: "The context is full, so the message was not sent (it is back in the message box). Compact the session memory or shorten the message, then send it again.",
    unreachableBanner: "Server unreachable — retrying… Your draft is kept; send it once the server is back.",
    backBanner: "Connected to the server again.",
    runningElsewhere: "This answer was started in another tab or on another device and is still being written; you can stop it here too.",
    turnBusy: "An answer is already being written in this session; following it here.",
    openSessions: "Sessions", accountMenu: "Account menu",
    fileNumber: "File {n}, {name}",
    imageLink: "Image: {alt}",
    leaveTitle: "Leave this page?", leaveBody: "The choice of active prompt and skills is not saved and will be lost.", leave: "Leave", stay: "Stay",
    copyFailed: "Could not copy; select the text by hand.",
    copyAnswer: "Copy as Markdown", retryAnswer: "Retry", editResend: "Edit & resend",
    sessionActions: "Session actions", rename: "Rename", renameSession: "Rename session",
    exportMarkdown: "Export Markdown", exportJson: "Export JSON",
    usageTitle: "Usage", usageTable: "Usage per account", usagePeriod: "Usage period",
    usageHint: "Tokens of each account's completed turns, and their cost when model prices are configured. Days are in this browser's time zone, both included; leave one empty for no bound.",
    usageFrom: "From", usageTo: "To", usageShow: "Show",
    usageAccount: "Account", usageTurns: "Turns", usageInput: "Input tokens", usageOutput: "Output tokens",
    usageCost: "Cost", usageTotal: "All accounts",
    deleteSession: "Delete session", deleteSessionConfirm: "“{title}” and all its messages will be deleted. This cannot be undone.",
    sessionDeleted: "Session deleted.", sessionRenamed: "Session renamed.",
  },
};

function initial() {
  const saved = localStorage.getItem(STORE_KEY);
  if (saved in MESSAGES) return saved;
  const first = (navigator.languages && navigator.languages[0]) || navigator.language || "";
  return first.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

let current = initial();

export function language() {
  return current;
}

/** The text of `key` in the current language, `{name}` fields filled from `values`. */
export function t(key, values = {}) {
  const text = MESSAGES[current][key] ?? MESSAGES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** A feature module's own words, per language (merged into the catalog above). */
export function addMessages(more) {
  for (const [code, texts] of Object.entries(more)) Object.assign(MESSAGES[code], texts);
}

/** The language switch; switching reloads the page (drafts and running turns survive it). */
export function languagePicker() {
  const select = document.createElement("select");
  select.setAttribute("aria-label", MESSAGES[current].language);
  for (const [code, name] of [["zh-CN", "中文"], ["en", "English"]]) {
    const option = new Option(name, code, false, code === current);
    select.append(option);
  }
  select.addEventListener("change", () => {
    localStorage.setItem(STORE_KEY, select.value);
    location.reload();
  });
  return select;
}
