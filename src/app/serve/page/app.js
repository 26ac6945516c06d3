// The explorer page of `awari serve`: plain JavaScript, no build step. The server answers
// positions side to move first (pits 0..P-1 the side to move's, counter-clockwise from its
// leftmost pit); the page draws the side to move at the bottom, its pit 0 on the left, the
// opponent's row on top from pit 2P-1 on the left, so that sowing runs counter-clockwise
// as on a real board. Moves are sown here too (the rules are a dozen lines) so that a
// click needs one request, and each sowing is checked against the captures the server
// gives for that move.
"use strict";

const $ = (id) => document.getElementById(id);
const NAMES = ["Player 1", "Player 2"];

const S = {
  databases: [],
  rules: "awari",
  pits: 6,
  // The game as a list of states; `at` is the one shown (undo and redo move it).
  states: [],
  at: 0,
  auto: [false, false],
  editing: false,
  analysis: null,
  // Why the position shown has no value (the server's error), or null.
  error: null,
  // Bumped on every change: an answer for an older state is dropped.
  generation: 0,
  cache: new Map(),
};

// A state: the position (side to move first), who is to move (0 or 1), the seeds each
// player captured, the move that led here and whether the game ended with it.
function state(pos, toMove, captured, ply, ended) {
  return { pos, toMove, captured, ply: ply || null, ended: ended || null };
}

function current() {
  return S.states[S.at];
}

// --- rules: the sowing of src/game/rules/ (moves.rs: play_raw, sow; mod.rs: turn) ---

function sow(pos, P, rules, o) {
  const np = 2 * P;
  let pits = pos.slice();
  const s = pits[o];
  pits[o] = 0;
  const laps = Math.floor(s / (np - 1));
  const rem = s % (np - 1);
  if (laps > 0) {
    for (let j = 0; j < np; j++) if (j !== o) pits[j] += laps;
  }
  let last = (o + np - 1) % np;
  if (rem > 0) {
    let j = o;
    for (let k = 0; k < rem; k++) {
      j = (j + 1) % np;
      pits[j] += 1;
    }
    last = j;
  }
  let captured = 0;
  if (last >= P) {
    const before = pits.slice();
    let j = last;
    while (j >= P && (pits[j] === 2 || pits[j] === 3)) {
      captured += pits[j];
      pits[j] = 0;
      j--;
    }
    // Oware: a capture of every opponent seed (grand slam) captures nothing.
    if (captured > 0 && rules === "oware" && pits.slice(P).every((c) => c === 0)) {
      pits = before;
      captured = 0;
    }
  }
  // The board turned: the opponent is now to move.
  return { child: pits.slice(P).concat(pits.slice(0, P)), captured };
}

// --- the API ---

async function api(pos, line) {
  const key = `${S.rules}/${S.pits}?position=${pos.join(",")}${line ? "&line=true" : ""}`;
  if (S.cache.has(key)) return S.cache.get(key);
  const r = await fetch(`api/v1/${key}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  S.cache.set(key, body);
  return body;
}

// --- words ---

function seeds(n) {
  return `${n} seed${n === 1 ? "" : "s"}`;
}

function valueClass(v) {
  return v > 0 ? "v-win" : v < 0 ? "v-loss" : "v-draw";
}

function signed(v) {
  return v > 0 ? `+${v}` : `${v}`;
}

function pitLetter(i) {
  return String.fromCharCode(97 + i);
}

// A distance to conversion in words: the plies to the next capture or the game's end.
function plies(d) {
  return d === 1 ? "1 ply" : `${d} plies`;
}

function valueWords(v) {
  if (v > 0) return `the side to move wins by ${seeds(v)}`;
  if (v < 0) return `the side to move loses by ${seeds(-v)}`;
  return "a draw: the seeds are shared evenly";
}

// --- drawing ---

function pitElement(count, id, label) {
  const el = document.createElement("button");
  el.className = "pit";
  el.id = id;
  el.dataset.count = count;
  const c = document.createElement("span");
  c.className = "count";
  c.textContent = count;
  if (count > 0 && count <= 15) {
    const dots = document.createElement("span");
    dots.className = "seeds";
    for (let k = 0; k < count; k++) {
      const d = document.createElement("span");
      d.className = "seed";
      dots.appendChild(d);
    }
    el.append(dots, c);
  } else if (count > 15) {
    const big = document.createElement("span");
    big.className = "big";
    big.textContent = count;
    el.append(big);
  }
  const l = document.createElement("span");
  l.className = "label";
  l.textContent = label;
  el.append(l);
  return el;
}

function render() {
  if (!S.states.length) return;
  const st = current();
  const P = S.pits;
  const a = S.analysis;
  const board = $("board");
  document.documentElement.style.setProperty("--pits", P);
  board.dataset.position = st.pos.join(",");
  board.dataset.toMove = st.toMove;
  board.classList.toggle("editing", S.editing);

  const top = $("row-top");
  const bottom = $("row-bottom");
  top.replaceChildren();
  bottom.replaceChildren();
  // The opponent's row: pit 2P-1 on the left, its own letters A.. from its left.
  for (let i = 2 * P - 1; i >= P; i--) {
    const el = pitElement(st.pos[i], `opp-${i - P}`, pitLetter(i - P).toUpperCase());
    el.dataset.pit = i;
    el.disabled = !S.editing;
    el.tabIndex = -1;
    el.setAttribute("aria-label", `opponent's pit ${pitLetter(i - P).toUpperCase()}, ${seeds(st.pos[i])}`);
    top.appendChild(el);
  }
  for (let i = 0; i < P; i++) {
    const el = pitElement(st.pos[i], `pit-${i}`, pitLetter(i));
    el.dataset.pit = i;
    const m = a && !S.editing && !st.ended ? a.moves.find((m) => m.pit === i) : null;
    if (m) {
      el.classList.add("legal");
      el.dataset.value = m.value;
      const v = document.createElement("span");
      v.className = `value ${valueClass(m.value)}`;
      v.textContent = signed(m.value);
      el.append(v);
      if (a.best.includes(i)) {
        el.classList.add("best");
        el.dataset.best = "1";
      }
      // Where the level has a distance table: the plies to the next capture this way.
      const converts = m.distance == null ? "" : `, converts in ${plies(m.distance)}`;
      if (m.distance != null) {
        el.dataset.distance = m.distance;
        const d = document.createElement("span");
        d.className = "distance";
        d.textContent = `in ${m.distance}`;
        el.append(d);
      }
      el.title = `${pitLetter(i)}: ${signed(m.value)}${m.captured ? `, captures ${m.captured}` : ""}${m.ends_game ? ", ends the game" : ""}${converts}`;
    }
    el.disabled = !S.editing && !m;
    const said = m ? `, value ${signed(m.value)}${m.distance == null ? "" : `, converts in ${plies(m.distance)}`}${a.best.includes(i) ? ", best" : ""}` : "";
    el.setAttribute("aria-label", `pit ${pitLetter(i)}, ${seeds(st.pos[i])}${said}`);
    bottom.appendChild(el);
  }

  // The players: the side to move at the bottom.
  for (const [where, who] of [["bottom", st.toMove], ["top", 1 - st.toMove]]) {
    const box = $(`player-${where}`);
    box.className = `player ${where} p${who}${where === "bottom" && !st.ended ? " turn" : ""}`;
    $(`name-${where}`).textContent = NAMES[who];
    $(`captured-${where}`).textContent = st.captured[who];
  }

  // The value in words.
  const vw = $("value-words");
  const sw = $("score-words");
  vw.className = "";
  if (S.editing) {
    vw.textContent = "Editing the position";
    sw.textContent = `${NAMES[st.toMove]} to move; ${seeds(st.pos.reduce((x, y) => x + y, 0))} on the board.`;
  } else if (st.ended) {
    vw.textContent = `Game over: ${st.ended}`;
    sw.textContent = finalWords(st.captured);
  } else if (a) {
    vw.className = valueClass(a.value);
    const n = a.seeds;
    const mine = st.captured[st.toMove] + (n + a.value) / 2;
    const theirs = st.captured[1 - st.toMove] + (n - a.value) / 2;
    const score = [0, 0];
    score[st.toMove] = mine;
    score[1 - st.toMove] = theirs;
    if (a.game_over) {
      vw.textContent = `Game over: ${a.game_over}`;
      sw.textContent = finalWords(score);
    } else {
      // The value is the margin on the seeds left; the captures so far make the score.
      const fromHere = st.captured[0] + st.captured[1] > 0 && a.value !== 0 ? " from here" : "";
      const converts = a.distance == null ? "" : `; converts in ${plies(a.distance)}`;
      vw.textContent = `${NAMES[st.toMove]} to move: ${valueWords(a.value)}${fromHere} (value ${signed(a.value)}${converts})`;
      sw.textContent = `With perfect play the game ends ${NAMES[0]} ${score[0]}, ${NAMES[1]} ${score[1]}: ${verdict(score)} (${seeds(n)} on the board).`;
    }
  } else if (S.error) {
    // The headline says what is wrong rather than waiting for a value that will not come.
    vw.className = "error";
    vw.textContent = `No value for this position: ${S.error}`;
    sw.textContent = "";
  } else {
    vw.textContent = "…";
    sw.textContent = "";
  }

  $("undo").disabled = S.at === 0;
  $("redo").disabled = S.at >= S.states.length - 1;
  const over = !a || !!st.ended || !!a.game_over || S.editing;
  $("best-move").disabled = over;
  $("show-pv").disabled = over;
  $("edit").classList.toggle("on", S.editing);
  $("editor").hidden = !S.editing;
  renderMoves();
  syncUrl();
}

function verdict([x, y]) {
  return x > y ? `${NAMES[0]} wins` : y > x ? `${NAMES[1]} wins` : "a draw";
}

function finalWords(score) {
  return `Final score: ${NAMES[0]} ${score[0]}, ${NAMES[1]} ${score[1]}: ${verdict(score)}.`;
}

function renderMoves() {
  const ol = $("moves");
  ol.replaceChildren();
  for (let k = 1; k < S.states.length; k++) {
    const p = S.states[k].ply;
    const li = document.createElement("li");
    li.dataset.pit = p.pit;
    li.dataset.lost = p.lost;
    li.dataset.player = p.player;
    li.innerHTML = `<span class="who${p.player}">${NAMES[p.player]}</span> ${pitLetter(p.pit)}` +
      ` <span class="${valueClass(p.value)} badge">${signed(p.value)}</span>` +
      (p.captured ? ` <span class="cap">takes ${p.captured}</span>` : "") +
      (p.lost > 0 ? ` <span class="lost">gave away ${seeds(p.lost)}</span>` : "");
    if (k === S.at) li.className = "current";
    li.title = "go to the position after this move";
    li.addEventListener("click", () => go(k));
    ol.appendChild(li);
  }
  $("moves-hint").hidden = S.states.length > 1;
}

// --- the permalink: #rules/pits/counts (toMove and captures are the game's, not the position's) ---

function syncUrl() {
  const h = `#${S.rules}/${S.pits}/${current().pos.join(",")}`;
  if (location.hash !== h) history.replaceState(null, "", h);
}

// The permalink's position, null without one, or { wrong } saying why it names no
// position served here.
function fromUrl() {
  if (location.hash === "" || location.hash === "#") return null;
  const m = /^#([a-z]+)\/(\d+)\/(\d+(?:,\d+)*)$/.exec(location.hash);
  if (!m) {
    return { wrong: `${location.hash} is not a permalink (#rules/pits/counts, e.g. #awari/6/4,4,4,4,4,4,4,4,4,4,4,4)` };
  }
  const u = { rules: m[1], pits: +m[2], pos: m[3].split(",").map(Number) };
  if (!S.databases.some((d) => d.rules === u.rules && d.pits === u.pits)) {
    const served = S.databases.map((d) => `${d.rules}-${d.pits}`).join(", ") || "none";
    u.wrong = `no ${u.rules} database of ${u.pits} pits per side is served here (served: ${served})`;
  } else if (u.pos.length !== 2 * u.pits) {
    u.wrong = `${location.hash} gives ${u.pos.length} pit counts; a board of ${u.pits} pits per side has ${2 * u.pits}`;
  }
  return u;
}

// Says why the permalink was not followed (the page shows what it showed, or the start).
function notice(msg) {
  $("notice").textContent = msg ? `Link not followed: ${msg}.` : "";
  $("notice").hidden = !msg;
}

// --- actions ---

async function refresh() {
  const gen = ++S.generation;
  const st = current();
  S.analysis = null;
  $("board").dataset.state = "loading";
  $("error").hidden = true;
  S.error = null;
  render();
  if (S.editing || st.ended) {
    $("board").dataset.state = "ready";
    return;
  }
  try {
    const a = await api(st.pos, false);
    if (gen !== S.generation) return;
    S.analysis = a;
    $("board").dataset.state = "ready";
    render();
    maybeAutoPlay();
  } catch (e) {
    if (gen !== S.generation) return;
    showError(e.message);
  }
}

function showError(msg) {
  S.error = msg;
  $("error").textContent = msg;
  $("error").hidden = false;
  $("board").dataset.state = "error";
  render();
}

function play(pit) {
  const st = current();
  const a = S.analysis;
  if (!a || S.editing || st.ended) return;
  const m = a.moves.find((m) => m.pit === pit);
  if (!m) return;
  const { child, captured } = sow(st.pos, S.pits, S.rules, pit);
  if (captured !== m.captured) {
    showError(`the page and the server disagree on the captures of ${pitLetter(pit)}`);
    return;
  }
  const caps = st.captured.slice();
  caps[st.toMove] += captured;
  let ended = null;
  let pos = child;
  if (m.ends_game) {
    // Awari: a move that leaves the opponent no seeds, when every move does: the mover
    // takes the rest.
    caps[st.toMove] += child.reduce((x, y) => x + y, 0);
    pos = child.map(() => 0);
    ended = `${NAMES[st.toMove]} leaves ${NAMES[1 - st.toMove]} no seeds and takes the rest`;
  }
  // A position that comes back with the same side to move ends the game (endless play):
  // the seeds left are split evenly, as the database values such a cycle.
  const key = `${1 - st.toMove}:${pos.join(",")}`;
  if (!ended && S.states.slice(0, S.at + 1).some((x) => `${x.toMove}:${x.pos.join(",")}` === key)) {
    const left = pos.reduce((x, y) => x + y, 0);
    caps[0] += left / 2;
    caps[1] += left / 2;
    ended = "a position repeats (endless play): the seeds left are split evenly";
  }
  const ply = { player: st.toMove, pit, value: m.value, captured, lost: a.value - m.value };
  S.states.splice(S.at + 1);
  S.states.push(state(pos, 1 - st.toMove, caps, ply, ended));
  S.at++;
  hidePv();
  refresh();
}

// Perfect play: the first move of the principal variation (in a won position the server
// picks the move that converts, so the database never circles).
async function bestMove() {
  const st = current();
  const gen = S.generation;
  if (!S.analysis || st.ended || S.analysis.game_over) return;
  try {
    const a = await api(st.pos, true);
    if (gen !== S.generation) return;
    const first = a.line.plies[0];
    if (first) play(first.pit);
  } catch (e) {
    showError(e.message);
  }
}

function maybeAutoPlay() {
  const st = current();
  if (!S.auto[st.toMove] || st.ended || !S.analysis || S.analysis.game_over || S.editing) return;
  const gen = S.generation;
  setTimeout(() => {
    if (gen === S.generation) bestMove();
  }, 350);
}

function go(k) {
  S.at = Math.max(0, Math.min(k, S.states.length - 1));
  hidePv();
  refresh();
}

// Undo goes back to a position where a human is to move: the database would answer
// again at once otherwise.
function undo() {
  let k = S.at - 1;
  while (k > 0 && S.auto[S.states[k].toMove]) k--;
  if (k >= 0) go(k);
}

function redo() {
  if (S.at < S.states.length - 1) go(S.at + 1);
}

function newGame(pos, toMove) {
  S.states = [state(pos, toMove || 0, [0, 0])];
  S.at = 0;
  hidePv();
}

async function showPv() {
  const st = current();
  const gen = S.generation;
  try {
    const a = await api(st.pos, true);
    if (gen !== S.generation) return;
    const ol = $("pv");
    ol.replaceChildren();
    for (const [i, p] of a.line.plies.entries()) {
      const who = (st.toMove + p.player) % 2;
      const li = document.createElement("li");
      li.innerHTML = `<span class="n">${i + 1}.</span> <span class="who${who}">P${who + 1}</span> ${pitLetter(p.pit)}` +
        (p.captured ? ` <span class="cap">takes ${p.captured}</span>` : "");
      ol.appendChild(li);
    }
    const [x, y] = a.line.score;
    const score = [0, 0];
    score[st.toMove] = x;
    score[1 - st.toMove] = y;
    $("pv-end").textContent = `${a.line.end}. Seeds won from here: ${NAMES[0]} ${score[0]}, ${NAMES[1]} ${score[1]}.`;
    $("pv-panel").hidden = false;
  } catch (e) {
    showError(e.message);
  }
}

function hidePv() {
  $("pv-panel").hidden = true;
}

// --- the editor ---

function setEditing(on) {
  S.editing = on;
  if (on) $("position-input").value = current().pos.join(",");
  refresh();
}

function editPit(i, delta) {
  const st = current();
  const pos = st.pos.slice();
  pos[i] = Math.max(0, pos[i] + delta);
  newGame(pos, st.toMove);
  $("position-input").value = pos.join(",");
  render();
}

function applyTyped() {
  const words = $("position-input").value.split(/[\s,]+/).filter((w) => w !== "");
  const P = S.pits;
  if (words.length !== 2 * P || words.some((w) => !/^\d+$/.test(w))) {
    showError(`type ${2 * P} pit counts (0 or more seeds each), side to move first`);
    return;
  }
  newGame(words.map(Number), current().toMove);
  setEditing(false);
}

function flip() {
  const st = current();
  const P = S.pits;
  newGame(st.pos.slice(P).concat(st.pos.slice(0, P)), 1 - st.toMove);
  $("position-input").value = current().pos.join(",");
  render();
}

function selectDatabase(rules, pits, pos) {
  S.rules = rules;
  S.pits = pits;
  $("db-select").value = `${rules}-${pits}`;
  const db = S.databases.find((d) => d.rules === rules && d.pits === pits);
  const ks = db ? db.start_seeds : [];
  const sel = $("start-k");
  sel.replaceChildren();
  for (const k of ks.length ? ks : [1]) {
    const o = document.createElement("option");
    o.value = k;
    o.textContent = `${k} seed${k === 1 ? "" : "s"} per pit`;
    sel.appendChild(o);
  }
  newGame(pos || new Array(2 * pits).fill(ks.length ? ks[ks.length - 1] : 1), 0);
}

// --- wiring ---

function wire() {
  $("row-bottom").addEventListener("click", (e) => boardClick(e, 1));
  $("row-top").addEventListener("click", (e) => boardClick(e, 1));
  for (const row of ["row-bottom", "row-top"]) {
    $(row).addEventListener("contextmenu", (e) => {
      if (!S.editing) return;
      e.preventDefault();
      boardClick(e, -1);
    });
  }
  $("undo").addEventListener("click", undo);
  $("redo").addEventListener("click", redo);
  $("best-move").addEventListener("click", bestMove);
  $("show-pv").addEventListener("click", showPv);
  $("edit").addEventListener("click", () => setEditing(!S.editing));
  $("done-edit").addEventListener("click", () => setEditing(false));
  $("apply-position").addEventListener("click", applyTyped);
  $("position-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter") applyTyped();
  });
  $("flip").addEventListener("click", flip);
  $("clear").addEventListener("click", () => {
    newGame(new Array(2 * S.pits).fill(0), current().toMove);
    $("position-input").value = current().pos.join(",");
    render();
  });
  $("start-k").addEventListener("change", () => {
    newGame(new Array(2 * S.pits).fill(+$("start-k").value), 0);
    $("position-input").value = current().pos.join(",");
    render();
  });
  for (const who of [0, 1]) {
    $(`db-plays-${who}`).addEventListener("change", (e) => {
      S.auto[who] = e.target.checked;
      maybeAutoPlay();
    });
  }
  $("db-select").addEventListener("change", (e) => {
    const [rules, pits] = e.target.value.split("-");
    notice(null);
    selectDatabase(rules, +pits);
    S.editing = false;
    refresh();
  });
  window.addEventListener("hashchange", () => {
    const u = fromUrl();
    if (u && u.wrong) {
      notice(u.wrong);
      return;
    }
    notice(null);
    if (!u || (u.rules === S.rules && u.pits === S.pits && u.pos.join(",") === current().pos.join(","))) return;
    selectDatabase(u.rules, u.pits, u.pos);
    refresh();
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    let pit = -1;
    if (k.length === 1 && k >= "a" && k <= "h") pit = k.charCodeAt(0) - 97;
    else if (k.length === 1 && k >= "1" && k <= "8") pit = k.charCodeAt(0) - 49;
    if (k === "u") undo();
    else if (k === "r") redo();
    else if (k === "p") showPv();
    else if (k === " ") {
      e.preventDefault();
      bestMove();
    } else if (pit >= 0 && pit < S.pits) play(pit);
  });
}

function boardClick(e, delta) {
  const el = e.target.closest(".pit");
  if (!el) return;
  const i = +el.dataset.pit;
  if (S.editing) editPit(i, e.shiftKey ? -delta : delta);
  else if (i < S.pits) play(i);
}

async function main() {
  wire();
  // A reload may keep the boxes ticked: the page follows them.
  S.auto = [0, 1].map((w) => $(`db-plays-${w}`).checked);
  try {
    const r = await fetch("api/v1/databases");
    S.databases = (await r.json()).databases.filter((d) => d.max_seeds !== null);
  } catch (e) {
    showError(`cannot list the databases: ${e.message}`);
    return;
  }
  const sel = $("db-select");
  for (const d of S.databases) {
    const o = document.createElement("option");
    o.value = `${d.rules}-${d.pits}`;
    o.textContent = `${d.rules}, ${d.pits} pits per side (up to ${d.max_seeds} seeds${d.packed ? ", packed" : ""})`;
    sel.appendChild(o);
  }
  const u = fromUrl();
  if (u && !u.wrong) {
    selectDatabase(u.rules, u.pits, u.pos);
  } else {
    if (u) notice(u.wrong);
    const d = S.databases.find((d) => d.rules === "awari" && d.pits === 6) || S.databases[0];
    if (!d) {
      showError("no database is served");
      return;
    }
    selectDatabase(d.rules, d.pits);
  }
  refresh();
}

main();
