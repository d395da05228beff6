*** Settings ***
Documentation     Boot and banner: the HIL firmware of an edgesdk build boots on riscv-npu, prints its
...               banner and exits cleanly.
...
...               Prepare and run:  edgesdk hil OUT [--emulator renode]
...               By hand, after that: robot --variable BUILD:OUT edgesdk/hil/suites/boot.robot
...                                    renode-test --variable BUILD:OUT edgesdk/hil/suites/boot.robot
Resource          ${RENODEKEYWORDS}
Resource          edgesdk.resource
Variables         ${BUILD}/hil/variables.py
Suite Setup       Setup
Suite Teardown    Teardown
Test Setup        Reset Emulation
Test Teardown     Test Teardown

*** Variables ***
# renode-test passes Renode's own keywords here; plain robot uses edgesdk's built-in emulator.
${RENODEKEYWORDS}    ${CURDIR}/../renode-keywords.robot

*** Test Cases ***
Firmware Boots And Prints Its Banner
    Create Board With Firmware
    Start Emulation
    Firmware Should Print Its Banner
    Wait For Line On Uart             edgesdk: run ok
    Firmware Should Exit With Code    0
