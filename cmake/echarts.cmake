# Apache ECharts for the HTML report (lua/apsearch/report/html.lua inlines
# it so the report works offline).  Fetched at configure time from the npm
# registry with `npm pack` (pinned version, checked against the registry's
# sha1 of the tarball), unpacked into the build tree:
#
#   ${PROJECT_BINARY_DIR}/report/echarts.min.js   (found next to the binary)
#   ${PROJECT_BINARY_DIR}/report/ECHARTS-LICENSE   Apache License 2.0
#   ${PROJECT_BINARY_DIR}/report/ECHARTS-NOTICE
#
# and installed to <prefix>/share/apsearch/report/ (found under the data
# root).  Nothing is committed: no node_modules, no echarts.min.js.
#
# Options:
#   APS_FETCH_ECHARTS  (ON)   fetch with npm when the script is missing
#   APS_ECHARTS_JS     (path) use this echarts.min.js instead (air-gapped
#                             builds: copy it from a machine with npm)
#
# Without npm, or offline, the build still succeeds: the report then holds
# the tables and says that its charts need ECharts (`apsearch run
# --echarts FILE` also works at run time).

set(APS_ECHARTS_VERSION "6.1.0")
# `npm view echarts@6.1.0 dist.shasum`
set(APS_ECHARTS_SHA1 "ae0f68590f5ebbd728d900907c27acde7c5456d1")
set(APS_ECHARTS_LICENSE "Apache-2.0")

option(APS_FETCH_ECHARTS "Fetch Apache ECharts with npm for the HTML report" ON)
set(APS_ECHARTS_JS "" CACHE FILEPATH "An echarts.min.js to use instead of fetching one")

set(APS_REPORT_DIR ${PROJECT_BINARY_DIR}/report)
set(APS_ECHARTS_OUT ${APS_REPORT_DIR}/echarts.min.js)
set(APS_ECHARTS_STAMP ${APS_REPORT_DIR}/ECHARTS-VERSION)
file(MAKE_DIRECTORY ${APS_REPORT_DIR})

set(_aps_have_echarts FALSE)
if(EXISTS ${APS_ECHARTS_OUT} AND EXISTS ${APS_ECHARTS_STAMP})
  file(READ ${APS_ECHARTS_STAMP} _aps_stamp)
  string(STRIP "${_aps_stamp}" _aps_stamp)
  if(_aps_stamp STREQUAL "${APS_ECHARTS_VERSION}")
    set(_aps_have_echarts TRUE)
  endif()
endif()

if(APS_ECHARTS_JS)
  if(NOT EXISTS "${APS_ECHARTS_JS}")
    message(FATAL_ERROR "APS_ECHARTS_JS=${APS_ECHARTS_JS} does not exist")
  endif()
  configure_file(${APS_ECHARTS_JS} ${APS_ECHARTS_OUT} COPYONLY)
  file(WRITE ${APS_ECHARTS_STAMP} "${APS_ECHARTS_VERSION}\n")
  set(_aps_have_echarts TRUE)
  message(STATUS "ECharts: using ${APS_ECHARTS_JS}")
elseif(NOT _aps_have_echarts AND APS_FETCH_ECHARTS)
  find_program(APS_NPM npm)
  if(NOT APS_NPM)
    message(WARNING "ECharts: npm not found; the HTML report will have tables only "
      "(install npm and re-run cmake, or pass -DAPS_ECHARTS_JS=/path/to/echarts.min.js, "
      "or give `apsearch run --echarts FILE`)")
  else()
    set(_aps_npm_dir ${PROJECT_BINARY_DIR}/_deps/echarts)
    file(REMOVE_RECURSE ${_aps_npm_dir})
    file(MAKE_DIRECTORY ${_aps_npm_dir})
    message(STATUS "ECharts: npm pack echarts@${APS_ECHARTS_VERSION}")
    execute_process(
      COMMAND ${APS_NPM} pack echarts@${APS_ECHARTS_VERSION} --silent
      WORKING_DIRECTORY ${_aps_npm_dir}
      RESULT_VARIABLE _aps_rc OUTPUT_VARIABLE _aps_out ERROR_VARIABLE _aps_err
      TIMEOUT 300)
    set(_aps_tgz ${_aps_npm_dir}/echarts-${APS_ECHARTS_VERSION}.tgz)
    if(NOT _aps_rc EQUAL 0 OR NOT EXISTS ${_aps_tgz})
      string(STRIP "${_aps_err}" _aps_err)
      message(WARNING "ECharts: `npm pack echarts@${APS_ECHARTS_VERSION}` failed (${_aps_rc}: "
        "${_aps_err}); the HTML report will have tables only (offline? pass "
        "-DAPS_ECHARTS_JS=/path/to/echarts.min.js)")
    else()
      file(SHA1 ${_aps_tgz} _aps_sha1)
      if(NOT _aps_sha1 STREQUAL APS_ECHARTS_SHA1)
        message(WARNING "ECharts: echarts-${APS_ECHARTS_VERSION}.tgz has sha1 ${_aps_sha1}, "
          "expected ${APS_ECHARTS_SHA1}; not used (the HTML report will have tables only)")
      else()
        file(ARCHIVE_EXTRACT INPUT ${_aps_tgz} DESTINATION ${_aps_npm_dir}
          PATTERNS package/dist/echarts.min.js package/LICENSE package/NOTICE)
        configure_file(${_aps_npm_dir}/package/dist/echarts.min.js ${APS_ECHARTS_OUT} COPYONLY)
        configure_file(${_aps_npm_dir}/package/LICENSE ${APS_REPORT_DIR}/ECHARTS-LICENSE COPYONLY)
        configure_file(${_aps_npm_dir}/package/NOTICE ${APS_REPORT_DIR}/ECHARTS-NOTICE COPYONLY)
        file(WRITE ${APS_ECHARTS_STAMP} "${APS_ECHARTS_VERSION}\n")
        set(_aps_have_echarts TRUE)
        message(STATUS "ECharts: ${APS_ECHARTS_OUT} (${APS_ECHARTS_LICENSE})")
      endif()
    endif()
  endif()
elseif(NOT _aps_have_echarts)
  message(WARNING "ECharts: APS_FETCH_ECHARTS is OFF and no APS_ECHARTS_JS given; "
    "the HTML report will have tables only")
else()
  message(STATUS "ECharts: ${APS_ECHARTS_OUT} (${APS_ECHARTS_VERSION}, ${APS_ECHARTS_LICENSE})")
endif()

# True when the build tree holds the script (tests/CMakeLists.txt reads it).
set(APS_HAVE_ECHARTS ${_aps_have_echarts})

if(_aps_have_echarts)
  install(FILES ${APS_ECHARTS_OUT} ${APS_ECHARTS_STAMP}
          DESTINATION ${CMAKE_INSTALL_DATADIR}/apsearch/report)
  foreach(_aps_f ECHARTS-LICENSE ECHARTS-NOTICE)
    if(EXISTS ${APS_REPORT_DIR}/${_aps_f})
      install(FILES ${APS_REPORT_DIR}/${_aps_f} DESTINATION ${CMAKE_INSTALL_DATADIR}/apsearch/report)
    endif()
  endforeach()
endif()
