// @ts-check
// The administration page, for administrators only: accounts (add, role, disable, new
// password, delete), every account's usage (admin_usage.js), one-time invite links, and
// groups with their members. Its words live here, in both languages.

import { UsageTable } from "./admin_usage.js";
import { api } from "./api.js";
import { confirmAction, formatTime, h, modal, notify } from "./dom.js";
import { language } from "./i18n.js";

const WORDS = {
  "zh-CN": {
    administration: "管理",
    users: "账号", addUser: "添加账号", username: "用户名", password: "密码", makeAdmin: "管理员",
    add: "添加", admin: "管理员", member: "成员", disabled: "已停用", active: "正常",
    created: "创建于 {time}", groupsOf: "用户组：{names}",
    disable: "停用", enable: "启用", promote: "设为管理员", demote: "设为成员",
    resetPassword: "重设密码", newPasswordFor: "为 {name} 设置新密码", save: "保存", cancel: "取消",
    passwordReset: "已为 {name} 设置新密码，其所有登录已失效。",
    delete: "删除", deleteUser: "删除账号 {name}",
    deleteUserConfirm: "将删除该账号及其全部会话、提示词、Skill、知识文档和长期记忆，且无法恢复。",
    deleted: "已删除 {name}：{sessions} 个会话、{prompts} 个提示词、{skills} 个 Skill、{documents} 个知识文档、{memories} 条记忆。",
    you: "（你）",
    invites: "邀请链接", invitesHint: "一次性注册链接：用它可以注册一个账号，过期时间为 72 小时。",
    createInvite: "生成邀请链接", inviteLink: "邀请链接", expires: "{time} 过期",
    groups: "用户组", groupsHint: "在 youyou.toml 的 [[mcp_servers]] 与 [[knowledge]] 中用 groups = [...] 引用用户组。",
    groupName: "用户组名称", addGroup: "新建用户组", noGroups: "还没有用户组。", noMembers: "暂无成员",
    addMember: "添加成员", removeMember: "将 {name} 移出 {group}", deleteGroup: "删除用户组 {name}",
    deleteGroupConfirm: "用户组及其成员关系将被删除，账号保留。",
  },
  en: {
    administration: "Administration",
    users: "Accounts", addUser: "Add account", username: "Username", password: "Password", makeAdmin: "Administrator",
    add: "Add", admin: "administrator", member: "member", disabled: "disabled", active: "active",
    created: "created {time}", groupsOf: "groups: {names}",
    disable: "Disable", enable: "Enable", promote: "Make administrator", demote: "Make member",
    resetPassword: "New password", newPasswordFor: "New password for {name}", save: "Save", cancel: "Cancel",
    passwordReset: "New password set for {name}; all their sign-ins have ended.",
    delete: "Delete", deleteUser: "Delete account {name}",
    deleteUserConfirm: "The account and all its sessions, prompts, skills, knowledge documents and memories are deleted for good.",
    deleted: "Deleted {name}: {sessions} sessions, {prompts} prompts, {skills} skills, {documents} knowledge documents, {memories} memories.",
    you: " (you)",
    invites: "Invite links", invitesHint: "A one-time sign-up link: it creates one account, and expires after 72 hours.",
    createInvite: "Create invite link", inviteLink: "Invite link", expires: "expires {time}",
    groups: "Groups", groupsHint: "Name groups in youyou.toml with groups = [...] on [[mcp_servers]] and [[knowledge]].",
    groupName: "Group name", addGroup: "Add group", noGroups: "No groups yet.", noMembers: "no members",
    addMember: "Add member", removeMember: "Remove {name} from {group}", deleteGroup: "Delete group {name}",
    deleteGroupConfirm: "The group and its memberships are deleted; the accounts stay.",
  },
};

/** The page's text of `key` in the UI's language, `{name}` fields filled from `values`. */
export function ta(key, values = {}) {
  const text = (WORDS[language()] || WORDS.en)[key] ?? WORDS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

export class AdminView {
  constructor(me) {
    this.me = me;
    this.users = [];
    this.userList = h("ul", { class: "cards", "aria-label": ta("users") });
    this.groupList = h("ul", { class: "cards", "aria-label": ta("groups") });
    this.invite = h("div", { role: "status" });
    this.usage = new UsageTable();
    const username = h("input", { type: "text", required: true, maxlength: 64, "aria-label": ta("username"), placeholder: ta("username") });
    const password = h("input", { type: "password", required: true, minlength: 8, autocomplete: "new-password", "aria-label": ta("password"), placeholder: ta("password") });
    const admin = h("input", { type: "checkbox" });
    const groupName = h("input", { type: "text", required: true, maxlength: 64, "aria-label": ta("groupName"), placeholder: ta("groupName") });
    this.el = h(
      "div",
      { class: "page" },
      h("h2", {}, ta("administration")),
      h(
        "section",
        { "aria-labelledby": "admin-users" },
        h("h3", { id: "admin-users" }, ta("users")),
        h(
          "form",
          {
            class: "card-head",
            "aria-label": ta("addUser"),
            onsubmit: (event) => this.act(event, async () => {
              await api("POST", "/admin/users", { username: username.value.trim(), password: password.value, role: admin.checked ? "admin" : "member" });
              username.value = password.value = "";
              admin.checked = false;
            }),
          },
          username, password, h("label", {}, admin, " ", ta("makeAdmin")),
          h("button", { type: "submit" }, ta("addUser")),
        ),
        this.userList,
      ),
      this.usage.el,
      h(
        "section",
        { "aria-labelledby": "admin-invites" },
        h("h3", { id: "admin-invites" }, ta("invites")),
        h("p", { class: "muted" }, ta("invitesHint")),
        h("button", { type: "button", onclick: () => this.createInvite() }, ta("createInvite")),
        this.invite,
      ),
      h(
        "section",
        { "aria-labelledby": "admin-groups" },
        h("h3", { id: "admin-groups" }, ta("groups")),
        h("p", { class: "muted" }, ta("groupsHint")),
        h(
          "form",
          {
            class: "card-head",
            "aria-label": ta("addGroup"),
            onsubmit: (event) => this.act(event, async () => {
              await api("POST", "/admin/groups", { name: groupName.value.trim() });
              groupName.value = "";
            }),
          },
          groupName,
          h("button", { type: "submit" }, ta("addGroup")),
        ),
        this.groupList,
      ),
    );
  }

  mount(container) {
    container.replaceChildren(this.el);
    this.load();
    this.usage.load();
  }

  unmount() {}

  /** Run a change, then show the page as the server now has it; a refusal is a toast. */
  async act(event, change) {
    event?.preventDefault();
    try {
      await change();
    } catch (error) {
      notify(error.message, "error");
    }
    await this.load();
  }

  async load() {
    let groups;
    try {
      [this.users, groups] = await Promise.all([api("GET", "/admin/users"), api("GET", "/admin/groups")]);
    } catch (error) {
      notify(error.message, "error");
      return;
    }
    this.userList.replaceChildren(...this.users.map((user) => this.userItem(user)));
    this.groupList.replaceChildren(...groups.map((group) => this.groupItem(group)));
    if (groups.length === 0) this.groupList.append(h("li", { class: "muted" }, ta("noGroups")));
  }

  userItem(user) {
    const self = user.id === this.me.id;
    const button = (label, onclick, danger = false) =>
      h("button", { type: "button", class: `ghost small${danger ? " danger" : ""}`, "aria-label": `${label}: ${user.username}`, onclick }, label);
    const post = (action) => () => this.act(null, () => api("POST", `/admin/users/${user.id}/${action}`));
    const facts = [
      ta(user.role), user.disabled ? ta("disabled") : ta("active"),
      ta("created", { time: formatTime(user.createdAt) }),
      user.groups.length ? ta("groupsOf", { names: user.groups.join(", ") }) : null,
    ].filter(Boolean);
    return h(
      "li",
      { class: "card", "aria-label": user.username },
      h(
        "div",
        { class: "card-head" },
        h("strong", {}, user.username, self ? ta("you") : ""),
        h("span", { class: "muted" }, facts.join(" · ")),
        h("span", { class: "spacer" }),
        self ? null : button(user.disabled ? ta("enable") : ta("disable"), post(user.disabled ? "enable" : "disable")),
        self ? null : button(user.role === "admin" ? ta("demote") : ta("promote"), post(user.role === "admin" ? "demote" : "promote")),
        button(ta("resetPassword"), () => this.resetPassword(user)),
        self ? null : button(ta("delete"), () => this.remove(user), true),
      ),
    );
  }

  async resetPassword(user) {
    const field = h("input", { type: "password", required: true, minlength: 8, autocomplete: "new-password" });
    const body = h("label", {}, ta("password"), field);
    setTimeout(() => field.focus());
    const answer = await modal(ta("newPasswordFor", { name: user.username }), body, [
      { label: ta("cancel"), value: false },
      { label: ta("save"), value: true, class: "primary" },
    ]);
    if (!answer) return;
    await this.act(null, async () => {
      await api("POST", `/admin/users/${user.id}/password`, { password: field.value });
      notify(ta("passwordReset", { name: user.username }));
    });
  }

  async remove(user) {
    const name = user.username;
    if (!(await confirmAction(ta("deleteUser", { name }), ta("deleteUserConfirm"), ta("delete")))) return;
    await this.act(null, async () => {
      const { removed } = await api("DELETE", `/admin/users/${user.id}`);
      notify(ta("deleted", {
        name, sessions: removed.sessions, prompts: removed.prompts, skills: removed.skills,
        documents: removed.knowledgeDocuments, memories: removed.memories,
      }));
    });
  }

  async createInvite() {
    try {
      const invite = await api("POST", "/admin/invites");
      const link = h("input", { type: "text", readonly: true, value: `${location.origin}${invite.path}`, "aria-label": ta("inviteLink") });
      this.invite.replaceChildren(h("div", { class: "card-head" }, link, h("span", { class: "muted" }, ta("expires", { time: formatTime(invite.expiresAt) }))));
      link.select();
    } catch (error) {
      notify(error.message, "error");
    }
  }

  groupItem(group) {
    const names = new Map(this.users.map((u) => [u.id, u.username]));
    const outside = this.users.filter((u) => !group.memberIds.includes(u.id));
    const picker = h("select", { "aria-label": `${ta("addMember")}: ${group.name}` },
      outside.map((u) => h("option", { value: u.id }, u.username)));
    return h(
      "li",
      { class: "card", "aria-label": group.name },
      h(
        "div",
        { class: "card-head" },
        h("strong", {}, group.name),
        h("span", { class: "spacer" }),
        picker,
        h("button", {
          type: "button", class: "ghost small", disabled: outside.length === 0,
          onclick: () => this.act(null, () => api("PUT", `/admin/groups/${group.id}/members/${picker.value}`)),
        }, ta("addMember")),
        h("button", {
          type: "button", class: "ghost small danger", "aria-label": ta("deleteGroup", { name: group.name }),
          onclick: async () => {
            if (await confirmAction(ta("deleteGroup", { name: group.name }), ta("deleteGroupConfirm"), ta("delete"))) {
              await this.act(null, () => api("DELETE", `/admin/groups/${group.id}`));
            }
          },
        }, ta("delete")),
      ),
      h(
        "p",
        { class: "muted" },
        group.memberIds.length === 0 ? ta("noMembers") : group.memberIds.map((id) => {
          const name = names.get(id) || id;
          return h("button", {
            type: "button", class: "ghost small", "aria-label": ta("removeMember", { name, group: group.name }),
            onclick: () => this.act(null, () => api("DELETE", `/admin/groups/${group.id}/members/${id}`)),
          }, `${name} ×`);
        }),
      ),
    );
  }
}
