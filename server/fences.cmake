# The fences between the layers of layers.cmake, checked on every build
# (the `fences` target runs this script when a source changes) and by
# `make check`:
#
#   cmake -DTOP=<source tree> -DSTAMP=<file to touch> -P server/fences.cmake
#
# Every #include "x.h" of a layer's files must name a header of its own
# folder or of a layer it USES (or the one header a "layer/x.h" item
# allows); every include of a restricted library (FLOCKD_RESTRICTED_HEADERS)
# must be one its SYSTEM list names. A header no layer holds is refused
# too: a new folder needs its row in layers.cmake first. Prints every
# breach, then fails.
cmake_minimum_required(VERSION 3.20)
if(NOT TOP)
  message(FATAL_ERROR "fences.cmake: pass -DTOP=<the source tree>")
endif()
include(${TOP}/server/layers.cmake)

# Where each header lives: header_<name> = its layer.
foreach(layer ${FLOCKD_LAYERS})
  file(GLOB_RECURSE headers ${TOP}/${FLOCKD_LAYER_${layer}_DIR}/*.h)
  foreach(h ${headers})
    get_filename_component(name ${h} NAME)
    if(DEFINED header_${name})
      message(FATAL_ERROR "fences: two layers hold a header named ${name} (${header_${name}}, ${layer})")
    endif()
    set(header_${name} ${layer})
  endforeach()
endforeach()

set(breaches "")
foreach(layer ${FLOCKD_LAYERS})
  set(uses ${FLOCKD_LAYER_${layer}_USES})
  set(system ${FLOCKD_LAYER_${layer}_SYSTEM})
  file(GLOB_RECURSE files ${TOP}/${FLOCKD_LAYER_${layer}_DIR}/*.c ${TOP}/${FLOCKD_LAYER_${layer}_DIR}/*.h)
  foreach(f ${files})
    file(RELATIVE_PATH rel ${TOP} ${f})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line ${lines})
      string(REGEX MATCH "[\"<]([^\">]+)[\">]" _ "${line}")
      set(inc ${CMAKE_MATCH_1})
      if(line MATCHES "include[ \t]*\"")
        get_filename_component(name ${inc} NAME)
        if(NOT DEFINED header_${name})
          list(APPEND breaches "${rel} includes \"${inc}\", a header no layer holds")
          continue()
        endif()
        set(owner ${header_${name}})
        if(owner STREQUAL layer OR owner IN_LIST uses OR "${owner}/${name}" IN_LIST uses)
          continue()
        endif()
        list(APPEND breaches
             "${rel} includes ${name} of ${owner}: ${layer} may use [${uses}] only")
      else()
        foreach(lib ${FLOCKD_RESTRICTED_HEADERS})
          string(FIND "${inc}" "${lib}" at)
          if(at EQUAL 0 AND NOT lib IN_LIST system)
            list(APPEND breaches "${rel} includes <${inc}>: ${layer} may include [${system}] only")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
endforeach()

if(breaches)
  list(JOIN breaches "\n  " text)
  message(FATAL_ERROR "fences: includes that run the wrong way (server/layers.cmake):\n  ${text}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
