*** Settings ***
Documentation     NPU error path: with its command table corrupted, the NPU reports the documented error
...               (docs/npu-datasheet.md: TABLE_MAGIC = 0x01, ERROR_COMMAND = 0xFFFFFFFF for a table-level
...               error), the firmware prints it and exits non-zero (1 = EDGESDK_NPU_ERR_STATUS negated).
Resource          ${RENODEKEYWORDS}
Resource          edgesdk.resource
Variables         ${BUILD}/hil/variables.py
Suite Setup       Setup
Suite Teardown    Teardown
Test Setup        Reset Emulation
Test Teardown     Test Teardown

*** Variables ***
${RENODEKEYWORDS}    ${CURDIR}/../renode-keywords.robot

*** Test Cases ***
Corrupted Command Table Gives The Documented Error And A Non-Zero Exit
    Skip If    '${NPU_TABLE_ADDRESS}' == ''    This build runs no command table on the NPU.
    Create Board With Firmware
    # Overwrite the table's magic ("NTBL") in flash before the CPU starts.
    Execute Command                   sysbus WriteDoubleWord ${NPU_TABLE_ADDRESS} 0x00000000
    Start Emulation
    Firmware Should Print Its Banner
    # ERROR_COMMAND 0xFFFFFFFF is printed as a signed number.
    Wait For Line On Uart             edgesdk: run failed status=-1 npu_error=1 npu_command=-1
    Firmware Should Exit With Code    1
