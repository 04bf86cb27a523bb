-- prelude.lua: what every room script runs on, before its own text (README
-- "Writing a room script"). Compiled into flockd (script_prelude.c is made
-- from this file) and run in each room's Lua state before the sandbox
-- closes: the one place `next` is still reachable.
--
-- It gives the script: `pairs` in a fixed order; the players present; the
-- match helper (lobby, countdown, playing, ended, rematch); and the runtime's
-- entry points (__hook, __save, __restore) that flockd calls.

local next, type, tostring, error = next, type, tostring, error
local table_sort, table_insert = table.sort, table.insert
local flock = flock

-- Keys in a fixed order: numbers ascending, then strings, then booleans.
local rank = {number = 1, string = 2, boolean = 3}
local function key_less(a, b)
  local ra, rb = rank[type(a)], rank[type(b)]
  if ra ~= rb then return ra < rb end
  if ra == 3 then return (not a) and b end
  return a < b
end

-- pairs visits a table's keys sorted (key_less), so that a script's effects
-- never depend on the order Lua happens to keep a table in.
function pairs(t)
  local mt = getmetatable(t)
  if mt and mt.__pairs then return mt.__pairs(t) end
  local keys, n = {}, 0
  for k in next, t do
    if not rank[type(k)] then error("pairs: a key of type " .. type(k) .. " has no order", 2) end
    n = n + 1
    keys[n] = k
  end
  table_sort(keys, key_less)
  local i = 0
  return function()
    i = i + 1
    local k = keys[i]
    if k ~= nil then return k, t[k] end
  end, t, nil
end

state = {}          -- the script's own; saved in checkpoints and across reloads

local sys = {players = {}, every = 1, since = 0, match = nil}

-- ---- players ---------------------------------------------------------------

local players = {}
function players.all() return sys.players end
function players.count()
  local n = 0
  for _ in next, sys.players do n = n + 1 end
  return n
end
function players.of_team(team)
  for _, p in pairs(sys.players) do
    if p.team == team then return p end
  end
end
_G.players = players

-- ---- the match helper --------------------------------------------------------

local match = {}
_G.match = match

local function publish_match(extra)
  local m = sys.match
  local out = {}
  if extra then for k, v in pairs(extra) do out[k] = v end end
  out.phase = m.phase
  out.round = m.round
  local ready = {}
  for _, p in pairs(sys.players) do
    if m.ready[p.id] then table_insert(ready, p.team > 0 and p.team or p.name) end
  end
  out.ready = ready
  if m.phase == "countdown" then
    out.time_left = math.max(0, math.ceil((m.until_tick - flock.tick()) / flock.tick_hz()))
  elseif m.phase == "playing" and m.cfg.time_limit then
    out.time_left = math.max(0, math.ceil((m.until_tick - flock.tick()) / flock.tick_hz()))
  end
  if m.phase == "lobby" then out.actions = {"ready", "unready"}
  elseif m.phase == "ended" then out.actions = {"rematch"}
    out.winner = m.winner
    out.results = m.results
  end
  m.last = out
  flock.publish(out)
end

-- match.setup{min_teams = 2, countdown = 3, time_limit = 180, late_join = "spectate"}
function match.setup(cfg)
  sys.match = {cfg = cfg or {}, phase = "lobby", ready = {}, round = 1, extra = {}}
  publish_match()
end

function match.phase() return sys.match and sys.match.phase end
-- The settings match.setup took; a script may change them between matches.
function match.config() return sys.match and sys.match.cfg end
function match.round() return sys.match and sys.match.round end

-- Seconds left in the countdown or before the time limit; nil without one.
function match.time_left()
  local m = sys.match
  if not m or not m.until_tick then return nil end
  return math.max(0, (m.until_tick - flock.tick()) / flock.tick_hz())
end

-- The script's own keys (scores, units by team...) shown with the match's.
function match.publish(extra)
  if not sys.match then return flock.publish(extra or {}) end
  sys.match.extra = extra or {}
  publish_match(sys.match.extra)
end

local function call(name, ...)
  local f = _G[name]
  if type(f) == "function" then return f(...) end
end

local function begin_play()
  local m = sys.match
  m.phase = "playing"
  m.until_tick = m.cfg.time_limit and flock.tick() + math.floor(m.cfg.time_limit * flock.tick_hz())
  call("on_match_start")
  publish_match(m.extra)
end

-- Ends the match: the winner (a team or a name) and results to everyone.
function match.finish(winner, results)
  local m = sys.match
  if not m or m.phase ~= "playing" then return end
  m.phase = "ended"
  m.winner = winner
  m.results = results
  m.until_tick = nil
  m.rematch = {}
  call("on_match_end", winner, results)
  publish_match(m.extra)
end

local function ready_teams()
  local n, all = 0, true
  for _, p in pairs(sys.players) do
    if p.team > 0 then
      if sys.match.ready[p.id] then n = n + 1 else all = false end
    end
  end
  return n, all
end

local function match_tick()
  local m = sys.match
  if m.phase == "lobby" then
    local n, all = ready_teams()
    if n >= (m.cfg.min_teams or 2) and (all or m.cfg.start == "any") then
      m.phase = "countdown"
      m.until_tick = flock.tick() + math.floor((m.cfg.countdown or 3) * flock.tick_hz())
      publish_match(m.extra)
    end
  elseif m.phase == "countdown" then
    if flock.tick() >= m.until_tick then begin_play()
    elseif (m.until_tick - flock.tick()) % math.floor(flock.tick_hz()) == 0 then
      publish_match(m.extra)
    end
  elseif m.phase == "playing" then
    if m.until_tick and flock.tick() >= m.until_tick then
      local winner, results = call("on_time_up")
      match.finish(winner, results)
    end
  end
end

local function match_command(p, msg)
  local m = sys.match
  local a = msg.action
  if a == "ready" or a == "unready" then
    if m.phase ~= "lobby" then return false, "the match has started" end
    if p.team <= 0 then return false, "only a player with a team can be ready" end
    m.ready[p.id] = (a == "ready") or nil
    publish_match(m.extra)
    return true
  elseif a == "rematch" then
    if m.phase ~= "ended" then return false, "no match has ended" end
    m.rematch[p.id] = true
    local want, have = 0, 0
    for _, q in pairs(sys.players) do
      if q.team > 0 then
        want = want + 1
        if m.rematch[q.id] then have = have + 1 end
      end
    end
    if have >= want then
      call("on_match_reset")
      m.phase, m.ready, m.winner, m.results = "lobby", {}, nil, nil
      m.round = m.round + 1
      m.extra = {}
      publish_match()
    end
    return true
  end
  return nil
end

-- ---- the runtime's entry points ------------------------------------------------

-- flock.tick_every(n): the tick hook every n ticks (1: every tick).
function flock.tick_every(n)
  n = math.tointeger(n)
  if not n or n < 1 then error("tick_every: a whole number of ticks >= 1", 2) end
  sys.every = n
end

local hooks = {}

function hooks.start() call("on_start") end

function hooks.tick()
  if sys.match then match_tick() end
  sys.since = sys.since + 1
  if sys.since >= sys.every then
    sys.since = 0
    call("on_tick", flock.tick())
  end
end

function hooks.join(p)
  local m = sys.match
  p.late = m ~= nil and m.phase ~= "lobby" and m.phase ~= "ended"
  sys.players[p.id] = p
  call("on_join", p)
  if m then publish_match(m.extra) end
end

function hooks.leave(p)
  local known = sys.players[p.id]
  sys.players[p.id] = nil
  if sys.match then sys.match.ready[p.id] = nil end
  call("on_leave", known or p)
  if sys.match then publish_match(sys.match.extra) end
end

function hooks.command(p, msg)
  p = sys.players[p.id] or p
  if sys.match and type(msg.action) == "string" then
    local ok, why = match_command(p, msg)
    if ok ~= nil then return ok, why end
  end
  if type(_G.on_game) ~= "function" then return false, "the script takes no commands" end
  return _G.on_game(p, msg)
end

function hooks.finish() call("on_end") end

function hooks.reloadable()
  if _G.reload == "now" then return true end
  local m = sys.match
  return m == nil or m.phase == "lobby" or m.phase == "ended"
end

function hooks.save() return {state = state, sys = sys} end

function hooks.restore(t)
  if type(t) ~= "table" then return end
  if type(t.state) == "table" then state = t.state end
  if type(t.sys) == "table" then
    for k, v in next, t.sys do sys[k] = v end
  end
end

return hooks
