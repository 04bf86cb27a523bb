// Generated from proto/schema.json by proto/schema.py: do not edit.
export default {
 "title": "flockd protocol schema",
 "description": "Every client command (arguments, types, ranges, who may send it, what its ack carries, the errors it can give) and every server JSON message, as data. PROTOCOL.md is the normative text; this file is the same protocol in a form programs read. The C parser is checked against it (tests/unit/test_schema.c), PROTOCOL.md's command, role and error tables are generated from it (proto/schema.py), and the client libraries validate commands with it before sending them.",
 "schema_version": 1,
 "protocol": {
  "versions": [
   1,
   2,
   3
  ],
  "subprotocols": [
   "flock.v3",
   "flock.v2",
   "flock.v1"
  ],
  "path": "/ws"
 },
 "limits": {
  "id_string_max": 64,
  "max_depth": 4,
  "number_text_max": 63,
  "seed_max": 9007199254740992,
  "u32_max": 4294967295
 },
 "bounds": {
  "W": "the world's width (welcome world.width)",
  "H": "the world's height (welcome world.height)",
  "C": "the room's boid capacity (welcome world.capacity)"
 },
 "strings": {
  "room": "1 to 32 bytes, each one of [A-Za-z0-9_-]",
  "printable": "printable UTF-8: no U+0000..U+001F, U+007F..U+009F"
 },
 "roles": [
  "viewer",
  "player",
  "admin"
 ],
 "modes": [
  "sandbox",
  "rts"
 ],
 "who": {
  "anyone": "every role",
  "player": "players and admins; in an rts room a player only for its own team (the command's team argument names its team's group)",
  "admin": "admins only"
 },
 "commands": [
  {
   "name": "ping",
   "summary": "Answers at once with the tick and the state hash the tick's commands started from.",
   "who": "anyone",
   "args": [],
   "ack": {
    "hash": {
     "type": "string",
     "doc": "sim_hash of the state this tick's commands started from, 16 hex digits"
    }
   },
   "errors": []
  },
  {
   "name": "seek",
   "summary": "Sets a group's seek/arrive target.",
   "who": "player",
   "team_arg": "group",
   "args": [
    {
     "name": "group",
     "type": "int",
     "min": 0,
     "max": 255,
     "required": true
    },
    {
     "name": "x",
     "type": "number",
     "min": 0,
     "max": "W",
     "required": true
    },
    {
     "name": "y",
     "type": "number",
     "min": 0,
     "max": "H",
     "required": true
    }
   ],
   "ack": {},
   "errors": []
  },
  {
   "name": "seek_clear",
   "summary": "Removes a group's target.",
   "who": "player",
   "team_arg": "group",
   "args": [
    {
     "name": "group",
     "type": "int",
     "min": 0,
     "max": 255,
     "required": true
    }
   ],
   "ack": {},
   "errors": []
  },
  {
   "name": "obstacle_add",
   "summary": "Adds a circular obstacle; players up to their quota.",
   "who": "player",
   "who_note": {
    "sandbox": "up to its quota",
    "rts": "up to its team's quota"
   },
   "args": [
    {
     "name": "x",
     "type": "number",
     "min": 0,
     "max": "W",
     "required": true
    },
    {
     "name": "y",
     "type": "number",
     "min": 0,
     "max": "H",
     "required": true
    },
    {
     "name": "r",
     "type": "number",
     "min": 1,
     "max": "min(W,H)/4",
     "required": true
    }
   ],
   "ack": {
    "obstacle": {
     "type": "int",
     "doc": "the new obstacle's id"
    }
   },
   "errors": [
    "capacity"
   ]
  },
  {
   "name": "obstacle_remove",
   "summary": "Removes an obstacle; players only their own (RTS: their team's).",
   "who": "player",
   "who_note": {
    "sandbox": "obstacles it added",
    "rts": "obstacles its team added"
   },
   "args": [
    {
     "name": "obstacle",
     "type": "int",
     "min": 1,
     "max": 4294967295,
     "required": true
    }
   ],
   "ack": {},
   "errors": [
    "not_found",
    "forbidden"
   ]
  },
  {
   "name": "obstacle_clear",
   "summary": "Removes every obstacle.",
   "who": "admin",
   "args": [],
   "ack": {},
   "errors": []
  },
  {
   "name": "spawn",
   "summary": "Places n boids of a group in a disc around (x, y).",
   "who": "admin",
   "args": [
    {
     "name": "n",
     "type": "int",
     "min": 1,
     "max": "C",
     "required": true
    },
    {
     "name": "group",
     "type": "int",
     "min": 0,
     "max": 255,
     "required": true
    },
    {
     "name": "x",
     "type": "number",
     "min": 0,
     "max": "W",
     "required": true
    },
    {
     "name": "y",
     "type": "number",
     "min": 0,
     "max": "H",
     "required": true
    },
    {
     "name": "spread",
     "type": "number",
     "min": 0,
     "max": "max(W,H)",
     "default": "min(50,max(W,H))"
    }
   ],
   "ack": {
    "count": {
     "type": "int",
     "doc": "boids spawned"
    }
   },
   "errors": [
    "capacity"
   ]
  },
  {
   "name": "despawn",
   "summary": "Removes the n newest boids of a group (absent: of any group).",
   "who": "admin",
   "args": [
    {
     "name": "n",
     "type": "int",
     "min": 1,
     "max": 4294967295,
     "required": true
    },
    {
     "name": "group",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "absent: any group"
    }
   ],
   "ack": {
    "count": {
     "type": "int",
     "doc": "boids removed (at most n)"
    }
   },
   "errors": []
  },
  {
   "name": "params",
   "summary": "Sets parameters of one group (absent: every group), all or nothing; with reset, every other parameter of it goes back to its default.",
   "who": "admin",
   "args": [
    {
     "name": "group",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "absent: every group"
    },
    {
     "name": "reset",
     "type": "bool",
     "doc": "true: the group's parameters go back to the room's defaults first; then the NAME: VALUE given, which may be none"
    }
   ],
   "registry": true,
   "ack": {},
   "errors": []
  },
  {
   "name": "pause",
   "summary": "Stops the room's clock; snapshots keep coming, flagged paused.",
   "who": "admin",
   "args": [],
   "ack": {},
   "errors": []
  },
  {
   "name": "resume",
   "summary": "Restarts the room's clock.",
   "who": "admin",
   "args": [],
   "ack": {},
   "errors": []
  },
  {
   "name": "step",
   "summary": "Pauses, then advances exactly n ticks.",
   "who": "admin",
   "args": [
    {
     "name": "n",
     "type": "int",
     "min": 1,
     "max": 1000,
     "default": 1
    }
   ],
   "ack": {
    "until": {
     "type": "int",
     "doc": "the tick the stepping ends at"
    }
   },
   "errors": []
  },
  {
   "name": "reset",
   "summary": "Empties the room, restores defaults, reseeds and scatters boids.",
   "who": "admin",
   "args": [
    {
     "name": "seed",
     "type": "int",
     "min": 0,
     "max": 9007199254740992,
     "doc": "absent: the server's seed"
    },
    {
     "name": "boids",
     "type": "int",
     "min": 0,
     "max": "C",
     "doc": "absent: the server's count"
    }
   ],
   "ack": {
    "count": {
     "type": "int",
     "doc": "boids after the reset"
    }
   },
   "errors": [
    "capacity"
   ]
  },
  {
   "name": "kick",
   "summary": "Closes another client of the room with 1008.",
   "who": "admin",
   "args": [
    {
     "name": "client",
     "type": "int",
     "min": 1,
     "max": 9007199254740992,
     "required": true
    }
   ],
   "ack": {},
   "errors": [
    "not_found"
   ]
  },
  {
   "name": "keyframe",
   "summary": "Asks for a key frame (version 2): the next snapshot after the ack is one.",
   "who": "anyone",
   "args": [],
   "ack": {},
   "errors": []
  },
  {
   "name": "stats",
   "summary": "The room's live figures and the flock's measures.",
   "who": "anyone",
   "args": [],
   "ack": {
    "stats": {
     "type": "object",
     "message": "stats",
     "doc": "the room's figures (§6.5)"
    }
   },
   "errors": []
  },
  {
   "name": "goto",
   "summary": "Moves a recording's playback to a tick.",
   "who": "admin",
   "args": [
    {
     "name": "tick",
     "type": "int",
     "min": 0,
     "max": 9007199254740992,
     "required": true
    }
   ],
   "ack": {},
   "errors": [
    "forbidden",
    "out_of_range"
   ]
  },
  {
   "name": "join",
   "summary": "Moves the connection to a room (created if allowed), with a role.",
   "who": "anyone",
   "args": [
    {
     "name": "room",
     "type": "string",
     "min_len": 1,
     "max_len": 32,
     "chars": "room",
     "required": true
    },
    {
     "name": "role",
     "type": "enum",
     "values": [
      "viewer",
      "player",
      "admin"
     ],
     "required": true
    },
    {
     "name": "mode",
     "type": "enum",
     "values": [
      "sandbox",
      "rts"
     ],
     "doc": "a room it creates; absent: sandbox"
    },
    {
     "name": "name",
     "type": "string",
     "min_len": 0,
     "max_len": 32,
     "chars": "printable"
    },
    {
     "name": "token",
     "type": "string",
     "min_len": 0,
     "max_len": 128,
     "chars": "printable",
     "secret": true
    },
    {
     "name": "password",
     "type": "string",
     "min_len": 0,
     "max_len": 128,
     "chars": "printable",
     "secret": true
    },
    {
     "name": "rejoin",
     "type": "string",
     "min_len": 0,
     "max_len": 128,
     "chars": "printable",
     "secret": true
    },
    {
     "name": "boids",
     "type": "int",
     "min": 0,
     "max": 4294967295,
     "doc": "a room it creates"
    },
    {
     "name": "width",
     "type": "number",
     "min": 16,
     "max": 1000000,
     "doc": "a room it creates; absent: sized for its boids"
    },
    {
     "name": "height",
     "type": "number",
     "min": 16,
     "max": 1000000,
     "doc": "a room it creates; absent: sized for its boids"
    },
    {
     "name": "edges",
     "type": "enum",
     "values": [
      "wrap",
      "contain"
     ],
     "doc": "a room it creates; absent: rts contain, sandbox the server's"
    },
    {
     "name": "teams",
     "type": "int",
     "min": 2,
     "max": 255,
     "doc": "an rts room it creates, at most the server's max-teams; absent: the server's"
    },
    {
     "name": "units",
     "type": "int",
     "min": 0,
     "max": 100000,
     "doc": "an rts room it creates: units per team, at most the server's team-cap; absent: the server's team-units"
    },
    {
     "name": "script",
     "type": "string",
     "min_len": 1,
     "max_len": 32,
     "chars": "room",
     "doc": "a room it creates runs this script of the server's scripts directory (§14)"
    }
   ],
   "ack": {
    "room": {
     "type": "string"
    },
    "role": {
     "type": "string"
    },
    "client": {
     "type": "int"
    },
    "team": {
     "type": "int",
     "optional": true,
     "doc": "RTS players"
    },
    "rejoin": {
     "type": "string",
     "optional": true,
     "doc": "RTS players: the token to take the team back"
    }
   },
   "errors": [
    "bad_room",
    "bad_arg",
    "forbidden",
    "out_of_range",
    "rate_limited"
   ]
  },
  {
   "name": "view",
   "summary": "What a version 3 client looks at: its frames hold that part of the room at a level of detail its budget takes (§12.4).",
   "who": "anyone",
   "args": [
    {
     "name": "x",
     "type": "number",
     "min": 0,
     "max": "W",
     "required": true
    },
    {
     "name": "y",
     "type": "number",
     "min": 0,
     "max": "H",
     "required": true
    },
    {
     "name": "w",
     "type": "number",
     "min": 1,
     "max": "W",
     "required": true
    },
    {
     "name": "h",
     "type": "number",
     "min": 1,
     "max": "H",
     "required": true
    },
    {
     "name": "px",
     "type": "int",
     "min": 1,
     "max": 16384,
     "doc": "pixels across; absent: one per world unit"
    },
    {
     "name": "budget",
     "type": "int",
     "min": 1000,
     "max": 100000000,
     "doc": "bytes per second; absent: the welcome's stream.budget"
    }
   ],
   "ack": {
    "shift": {
     "type": "int",
     "doc": "the grid shift of its frames"
    },
    "sample": {
     "type": "int",
     "doc": "their sample"
    },
    "rect": {
     "type": "array",
     "doc": "the super-tiles they hold: [column, row, columns, rows]"
    },
    "boids": {
     "type": "int",
     "doc": "about how many boids"
    },
    "bytes": {
     "type": "int",
     "doc": "expected bytes per frame"
    },
    "rate": {
     "type": "number",
     "doc": "frames per second"
    }
   },
   "errors": [
    "bad_arg"
   ]
  },
  {
   "name": "select",
   "summary": "Puts the team's selected units in a squad (§13.1): one of rect, ids, all or squads.",
   "who": "player",
   "team_arg": "team",
   "one_of": [
    "rect",
    "ids",
    "all",
    "squads"
   ],
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 0,
     "max": 32,
     "doc": "absent: the lowest-numbered squad with no units; 0: out of squads"
    },
    {
     "name": "rect",
     "type": "rect",
     "doc": "[x, y, w, h]: x in 0..W, y in 0..H, w and h in (0, 10^7]"
    },
    {
     "name": "ids",
     "type": "array",
     "items": "int",
     "min": 1,
     "max": 4294967295,
     "min_items": 1,
     "max_items": 256,
     "doc": "boid ids (§12.2)"
    },
    {
     "name": "all",
     "type": "bool",
     "values": [
      true
     ],
     "doc": "every unit of the team"
    },
    {
     "name": "squads",
     "type": "array",
     "items": "int",
     "min": 0,
     "max": 32,
     "min_items": 1,
     "max_items": 33,
     "doc": "the units of these squads"
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad the units went into"
    },
    "units": {
     "type": "int",
     "doc": "its units now"
    }
   },
   "errors": [
    "bad_arg",
    "not_found",
    "forbidden",
    "capacity",
    "out_of_range"
   ]
  },
  {
   "name": "move",
   "summary": "A squad goes through the points in turn and stops at the last (§13.2).",
   "who": "player",
   "team_arg": "team",
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    },
    {
     "name": "to",
     "type": "array",
     "items": "point",
     "min_items": 1,
     "max_items": 16,
     "required": true,
     "doc": "the waypoints"
    },
    {
     "name": "queue",
     "type": "bool",
     "doc": "true: after the squad's current waypoints (at most 16 in all)"
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found",
    "out_of_range"
   ]
  },
  {
   "name": "patrol",
   "summary": "A squad goes through the points and back to where it was, round and round (§13.2).",
   "who": "player",
   "team_arg": "team",
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    },
    {
     "name": "to",
     "type": "array",
     "items": "point",
     "min_items": 1,
     "max_items": 15,
     "required": true,
     "doc": "the waypoints"
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found"
   ]
  },
  {
   "name": "follow",
   "summary": "A squad keeps behind another squad of the team or a unit (§13.2): one of squad_of or unit.",
   "who": "player",
   "team_arg": "team",
   "one_of": [
    "squad_of",
    "unit"
   ],
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    },
    {
     "name": "squad_of",
     "type": "int",
     "min": 1,
     "max": 32,
     "doc": "a squad of the team"
    },
    {
     "name": "unit",
     "type": "int",
     "min": 1,
     "max": 4294967295,
     "doc": "a boid's id"
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found"
   ]
  },
  {
   "name": "hold",
   "summary": "A squad stays where it is and does not pursue (§13.2).",
   "who": "player",
   "team_arg": "team",
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found"
   ]
  },
  {
   "name": "stop",
   "summary": "A squad drops its waypoints and stays where it is (§13.2).",
   "who": "player",
   "team_arg": "team",
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found"
   ]
  },
  {
   "name": "formation",
   "summary": "Sets a squad's formation (§13.3).",
   "who": "player",
   "team_arg": "team",
   "args": [
    {
     "name": "team",
     "type": "int",
     "min": 0,
     "max": 255,
     "doc": "an admin's: the team; a player's is its own"
    },
    {
     "name": "squad",
     "type": "int",
     "min": 1,
     "max": 32,
     "required": true
    },
    {
     "name": "shape",
     "type": "enum",
     "values": [
      "none",
      "line",
      "column",
      "wedge",
      "box"
     ],
     "required": true
    },
    {
     "name": "spacing",
     "type": "number",
     "min": 1,
     "max": 200,
     "doc": "between slots; absent: 1.25 x the group's separation_radius"
    }
   ],
   "ack": {
    "squad": {
     "type": "int",
     "doc": "the squad"
    }
   },
   "errors": [
    "bad_arg",
    "not_found",
    "out_of_range"
   ]
  },
  {
   "name": "game",
   "summary": "A custom command for the room's script: every member but cmd and id, at most 1024 bytes as JSON (§14).",
   "who": "anyone",
   "args": [],
   "open_args": true,
   "ack": {},
   "errors": [
    "bad_arg",
    "refused"
   ]
  },
  {
   "name": "script",
   "summary": "Reloads the room's script from the scripts directory (§14).",
   "who": "admin",
   "args": [
    {
     "name": "reload",
     "type": "bool",
     "required": true
    }
   ],
   "ack": {
    "at": {
     "type": "string",
     "doc": "now, next_match or unchanged"
    }
   },
   "errors": [
    "bad_arg",
    "not_found"
   ]
  }
 ],
 "messages": {
  "welcome": {
   "doc": "Sent first on every connection and after each accepted join (§6.1).",
   "members": {
    "protocol": {
     "type": "int"
    },
    "server": {
     "type": "string"
    },
    "version": {
     "type": "string"
    },
    "client": {
     "type": "int"
    },
    "room": {
     "type": "string"
    },
    "mode": {
     "type": "string"
    },
    "role": {
     "type": "string"
    },
    "team": {
     "type": "int",
     "optional": true
    },
    "tick": {
     "type": "int"
    },
    "tick_hz": {
     "type": "number"
    },
    "snapshot_hz": {
     "type": "number"
    },
    "world": {
     "type": "object",
     "members": {
      "width": {
       "type": "number"
      },
      "height": {
       "type": "number"
      },
      "edges": {
       "type": "string"
      },
      "capacity": {
       "type": "int"
      },
      "max_obstacles": {
       "type": "int"
      }
     }
    },
    "limits": {
     "type": "object",
     "members": {
      "max_message": {
       "type": "int"
      },
      "rate": {
       "type": "number"
      },
      "burst": {
       "type": "int"
      },
      "player_obstacles": {
       "type": "int"
      }
     }
    },
    "teams": {
     "type": "object",
     "optional": true,
     "doc": "rts rooms",
     "members": {
      "max": {
       "type": "int"
      },
      "units": {
       "type": "int"
      },
      "cap": {
       "type": "int"
      }
     }
    },
    "params": {
     "type": "array",
     "items": {
      "type": "object",
      "members": {
       "name": {
        "type": "string"
       },
       "default": {
        "type": "number"
       },
       "min": {
        "type": "number"
       },
       "max": {
        "type": "number"
       },
       "unit": {
        "type": "string"
       },
       "integer": {
        "type": "bool"
       },
       "help": {
        "type": "string"
       }
      }
     }
    },
    "values": {
     "type": "object"
    },
    "groups": {
     "type": "object",
     "optional": true
    },
    "flock": {
     "type": "object",
     "optional": true,
     "message": "flock"
    },
    "available": {
     "type": "bool",
     "optional": true
    },
    "reason": {
     "type": "string",
     "optional": true
    },
    "dilation": {
     "type": "number",
     "optional": true,
     "doc": "only while the room's clock runs slow (§6.7)"
    },
    "replay": {
     "type": "object",
     "optional": true,
     "members": {
      "first_tick": {
       "type": "int"
      },
      "last_tick": {
       "type": "int"
      }
     }
    },
    "stream": {
     "type": "object",
     "optional": true,
     "doc": "version 3 connections (§12.3)",
     "members": {
      "tiles": {
       "type": "object",
       "members": {
        "cols": {
         "type": "int"
        },
        "rows": {
         "type": "int"
        }
       }
      },
      "max_shift": {
       "type": "int"
      },
      "max_sample": {
       "type": "int"
      },
      "field": {
       "type": "object",
       "members": {
        "cells": {
         "type": "int"
        },
        "vscale": {
         "type": "number"
        }
       }
      },
      "budget": {
       "type": "int"
      },
      "audience": {
       "type": "string"
      },
      "delay_s": {
       "type": "number"
      }
     }
    }
   }
  },
  "ack": {
   "doc": "A command took effect (§6.2); further members per command (commands[].ack).",
   "members": {
    "id": {
     "type": "any"
    },
    "tick": {
     "type": "int"
    }
   }
  },
  "error": {
   "doc": "A command was refused and changed nothing (§6.3).",
   "members": {
    "id": {
     "type": "any"
    },
    "code": {
     "type": "string"
    },
    "message": {
     "type": "string"
    }
   }
  },
  "roster": {
   "doc": "Who plays in the room (§6.4).",
   "members": {
    "room": {
     "type": "string"
    },
    "mode": {
     "type": "string"
    },
    "viewers": {
     "type": "int"
    },
    "players": {
     "type": "array",
     "items": {
      "type": "object",
      "members": {
       "client": {
        "type": "int"
       },
       "name": {
        "type": "string"
       },
       "role": {
        "type": "string"
       },
       "team": {
        "type": "int",
        "optional": true
       },
       "connected": {
        "type": "bool"
       }
      }
     }
    },
    "more": {
     "type": "int",
     "optional": true
    }
   }
  },
  "squads": {
   "doc": "A team's squads, to its players and to admins (§13.5).",
   "members": {
    "tick": {
     "type": "int"
    },
    "team": {
     "type": "int"
    },
    "squads": {
     "type": "array",
     "doc": "per squad with units: squad, units, do, to, formation, spacing, anchor, facing; squad_of or unit when following"
    }
   }
  },
  "availability": {
   "doc": "A relayed room became unreachable or is back (§6.6).",
   "members": {
    "room": {
     "type": "string"
    },
    "available": {
     "type": "bool"
    },
    "reason": {
     "type": "string",
     "optional": true
    }
   }
  },
  "dilation": {
   "doc": "The room's clock runs slow, or keeps time again (§6.7).",
   "members": {
    "room": {
     "type": "string"
    },
    "factor": {
     "type": "number",
     "doc": "(0, 1]: ticks a second over the welcome's tick_hz"
    },
    "tick_hz": {
     "type": "number",
     "doc": "ticks a second now"
    },
    "snapshot_hz": {
     "type": "number",
     "doc": "snapshots a second now"
    }
   }
  },
  "stats": {
   "doc": "The ack member of stats (§6.5), not a message of its own.",
   "members": {
    "boids": {
     "type": "int"
    },
    "paused": {
     "type": "bool"
    },
    "tick_ms_mean": {
     "type": "number"
    },
    "tick_ms_p99": {
     "type": "number"
    },
    "late_ms_p99": {
     "type": "number"
    },
    "dilation": {
     "type": "number",
     "doc": "(0, 1]; 1 unless the room's clock runs slow (§6.7)"
    },
    "snapshot_hz": {
     "type": "number",
     "doc": "snapshots a second now (§6.7)"
    },
    "flock": {
     "type": "object",
     "nullable": true,
     "message": "flock"
    }
   }
  },
  "flock": {
   "doc": "The flock's measures (§6.5), in stats and in the welcome.",
   "members": {
    "tick": {
     "type": "int"
    },
    "boids": {
     "type": "int"
    },
    "local_polarization": {
     "type": "number"
    },
    "global_polarization": {
     "type": "number"
    },
    "nn_p5": {
     "type": "number"
    },
    "nn_median": {
     "type": "number"
    },
    "mean_speed": {
     "type": "number"
    },
    "clusters": {
     "type": "int"
    },
    "largest_cluster": {
     "type": "int"
    },
    "flocks": {
     "type": "int"
    },
    "mills": {
     "type": "int"
    },
    "mill_fraction": {
     "type": "number"
    },
    "measure_ms": {
     "type": "number"
    }
   }
  }
 },
 "errors": [
  {
   "code": "bad_json",
   "by": "parser",
   "when": "the message is not strict JSON, not an object, contains NUL, is nested deeper than 4 levels (§5.2)"
  },
  {
   "code": "too_large",
   "by": "parser / transport",
   "when": "the message is longer than `max_message` (over WebSocket the connection is closed with 1009 instead)"
  },
  {
   "code": "unknown_cmd",
   "by": "parser",
   "when": "`cmd` names no command of this protocol version"
  },
  {
   "code": "bad_arg",
   "by": "parser",
   "when": "a field is missing, unknown, duplicated, of the wrong JSON type, not whole where an integer is needed, an object or array, or a string with forbidden characters; `cmd` missing or not a string; `params` without a parameter"
  },
  {
   "code": "out_of_range",
   "by": "parser (and, defensively, the room)",
   "when": "a well-typed value outside its range (world bounds, group, counts, radius, registry bounds, string lengths, id length)"
  },
  {
   "code": "capacity",
   "by": "room, at apply time",
   "when": "spawn or reset would exceed the boid capacity; obstacle_add when the room holds `max_obstacles`"
  },
  {
   "code": "not_found",
   "by": "room, at apply time",
   "when": "obstacle_remove names no current obstacle"
  },
  {
   "code": "queue_full",
   "by": "server, at once",
   "when": "the room's command queue is full; the command was dropped"
  },
  {
   "code": "rate_limited",
   "by": "server, in turn",
   "when": "the client sends commands faster than the server allows, or its address (or every address) must wait after wrong admin tokens or passwords before a join's secret is looked at (§5.6); the command was dropped"
  },
  {
   "code": "forbidden",
   "by": "server",
   "when": "the client's role may not use this command (e.g. a viewer sending seek), the group or obstacle is another player's, or a join's token or password is wrong (§5.6)"
  },
  {
   "code": "not_joined",
   "by": "server",
   "when": "the command needs a room and the client has none (reserved: every connection starts in `default`)"
  },
  {
   "code": "bad_room",
   "by": "server",
   "when": "`join`: no such room and it cannot be created, the mode differs, every RTS team is taken, or (a cluster) a player joins an RTS room on a node that does not tick it (§5.6; the message names the node)"
  },
  {
   "code": "internal",
   "by": "server",
   "when": "a fault in the server; the command may or may not have been applied"
  },
  {
   "code": "refused",
   "by": "room",
   "when": "the room's script refused the command; its message is the script's reason (§14)"
  },
  {
   "code": "unavailable",
   "by": "server",
   "when": "a cluster room could not make the command durable (its owner cannot reach NATS, its lease is stale, or its command log did not take it): it did not take effect, send it again; or a forwarded command had no reply from any owner for 8 s: its outcome is unknown, the message says so (§5.7)"
  }
 ]
};
