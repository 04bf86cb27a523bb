-- flockwars: two to four teams of flocking units; a unit that enemies
-- outnumber near it joins them. A team with no units is out; the last team
-- standing wins, or the largest when time runs out. (README "Writing a room
-- script" explains it line by line.)

local RADIUS = 40      -- how near counts as "near", world units
local RATIO = 1.5      -- enemies must outnumber a unit's side by this much
local UNITS = 200      -- units a team starts with (state.units may change it)
local TIME_LIMIT = 180 -- seconds a match lasts at most

match.setup{min_teams = 2, countdown = 3, time_limit = TIME_LIMIT}
flock.tick_every(1)

-- Where team t's base is: on a circle round the middle, opposite for two.
local function base(t, teams)
  local w = flock.world()
  local a = 2 * math.pi * (t - 1) / math.max(teams, 2)
  local r = 0.35 * math.min(w.width, w.height)
  return w.width / 2 + r * math.cos(a), w.height / 2 + r * math.sin(a)
end

local function teams_playing()
  local list = {}
  for _, p in pairs(players.all()) do
    if p.team > 0 and not p.late then list[#list + 1] = p.team end
  end
  table.sort(list)
  return list
end

function on_match_start()
  state.teams = teams_playing()
  state.out = {}
  state.captured = {}
  for _, t in ipairs(state.teams) do
    local x, y = base(t, #state.teams)
    flock.spawn(t, state.units or UNITS, x, y, 60)
    state.captured[t] = 0
  end
end

-- Every tick: captures, then who is out, then whether it is over.
function on_tick()
  if match.phase() ~= "playing" then return end
  local ids, by = flock.outnumbered(RADIUS, RATIO)
  local to = {}
  for i = 1, #ids do
    local t = by[i]
    to[t] = to[t] or {}
    to[t][#to[t] + 1] = ids[i]
  end
  for t, list in pairs(to) do
    flock.convert(list, t)
    state.captured[t] = (state.captured[t] or 0) + #list
  end
  local counts = flock.count()
  local alive = {}
  for _, t in ipairs(state.teams) do
    if (counts[t] or 0) > 0 then alive[#alive + 1] = t
    elseif not state.out[t] then state.out[t] = flock.tick() end
  end
  if flock.tick() % 15 == 0 or #alive <= 1 then
    match.publish({units = counts, captured = state.captured})
  end
  if #alive == 1 then
    match.finish(alive[1], {units = counts, captured = state.captured})
  elseif #alive == 0 then
    match.finish(nil, {units = counts})
  end
end

-- Time is up: the team with the most units wins (the lower number on a tie).
function on_time_up()
  local counts = flock.count()
  local best, most = nil, -1
  for _, t in ipairs(state.teams) do
    if (counts[t] or 0) > most then best, most = t, counts[t] or 0 end
  end
  return best, {units = counts, captured = state.captured}
end

-- A rematch: every unit goes, the lobby starts again.
function on_match_reset()
  for _, t in ipairs(state.teams or {}) do flock.despawn(flock.units(t)) end
end

-- Custom commands: an admin may set the units per team and the time limit
-- before a match.
function on_game(p, msg)
  if msg.action == "time_limit" then
    if p.role ~= "admin" then return false, "only an admin sets the time limit" end
    local s = tonumber(msg.seconds)
    if not s or s < 1 or s > 3600 then return false, "time_limit: seconds 1..3600" end
    if match.phase() ~= "lobby" then return false, "the time limit is set in the lobby" end
    match.config().time_limit = s
    return true
  elseif msg.action == "units" then
    if p.role ~= "admin" then return false, "only an admin sets the units per team" end
    local n = math.tointeger(msg.n)
    if not n or n < 1 or n > 5000 then return false, "units: a whole number 1..5000" end
    state.units = n
    return true
  end
  return false, "unknown action: " .. tostring(msg.action)
end
