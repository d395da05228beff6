//
// Minimal stand-ins for the parts of Renode's API that edgesdk's C# peripherals use, so they can be
// compiled (and exercised) here, where Renode itself cannot be installed.
//
// Written from Renode's public sources (renode/renode-infrastructure, src/Emulator/Main): each type below
// has the namespace, name and member signatures of the Renode type it stands in for, reduced to the
// members edgesdk's peripherals (edgesdk/renode/*.cs) use. If a peripheral starts using more of
// Renode, add the member here with Renode's exact signature. Nothing here is loaded into Renode.
//
// Renode source of each stand-in:
//   IEmulationElement, IMachine, GPIO          src/Emulator/Main/Core/
//   IPeripheral                                src/Emulator/Main/Peripherals/IPeripheral.cs
//   IBusPeripheral, IDoubleWordPeripheral,     src/Emulator/Main/Peripherals/Bus/
//   IBusController
//   ICPU                                       src/Emulator/Main/Peripherals/CPU/ICPU.cs
//   IAnalyzable                                src/Emulator/Main/UserInterface/
//   LogLevel, Logger (Log extension)           src/Emulator/Main/Logging/
// and from Migrant (antmicro/Migrant, lib/Migrant in renode/renode), Renode's serializer for snapshots:
//   TransientAttribute                         Migrant/TransientAttribute.cs
//   PreSerialization, PostSerialization,       Migrant/Hooks/
//   PostDeserialization attributes
//
using System;
using System.Collections.Generic;

namespace Antmicro.Migrant
{
    // A field (or every field of a type) that Migrant leaves out of a snapshot; it is default after loading.
    [AttributeUsage(AttributeTargets.Class | AttributeTargets.Struct | AttributeTargets.Field | AttributeTargets.Event)]
    public class TransientAttribute : Attribute
    {
    }
}

namespace Antmicro.Migrant.Hooks
{
    // Invoked on an object before it is serialized.
    [AttributeUsage(AttributeTargets.Method)]
    public class PreSerializationAttribute : Attribute
    {
    }

    // Invoked on an object after it has been serialized.
    [AttributeUsage(AttributeTargets.Method)]
    public class PostSerializationAttribute : Attribute
    {
    }

    // Invoked on a deserialized object once it and every object it references are deserialized.
    [AttributeUsage(AttributeTargets.Method)]
    public class PostDeserializationAttribute : Attribute
    {
    }
}

namespace Antmicro.Renode.Core
{
    public interface IEmulationElement
    {
    }

    public interface IMachine
    {
        Antmicro.Renode.Peripherals.Bus.IBusController GetSystemBus(Antmicro.Renode.Peripherals.Bus.IBusPeripheral peripheral);
        void PauseAndRequestEmulationPause(bool precise = false);
    }

    public sealed class GPIO
    {
        public bool IsSet { get; private set; }

        public void Set(bool value)
        {
            IsSet = value;
        }

        public void Toggle()
        {
            Set(!IsSet);
        }
    }
}

namespace Antmicro.Renode.UserInterface
{
    public interface IAnalyzable
    {
    }
}

namespace Antmicro.Renode.Peripherals
{
    public interface IPeripheral : Antmicro.Renode.Core.IEmulationElement, Antmicro.Renode.UserInterface.IAnalyzable
    {
        void Reset();
    }
}

namespace Antmicro.Renode.Peripherals.CPU
{
    public interface ICPU : IPeripheral
    {
    }
}

namespace Antmicro.Renode.Peripherals.Bus
{
    using Antmicro.Renode.Peripherals.CPU;

    public interface IBusPeripheral : IPeripheral
    {
    }

    public interface IDoubleWordPeripheral : IBusPeripheral
    {
        uint ReadDoubleWord(long offset);
        void WriteDoubleWord(long offset, uint value);
    }

    public interface IBusController : IPeripheral
    {
        byte[] ReadBytes(ulong address, int count, bool onlyMemory = false, ICPU context = null);
        void WriteBytes(byte[] bytes, ulong address, bool onlyMemory = false, ICPU context = null);
    }
}

namespace Antmicro.Renode.Logging
{
    using Antmicro.Renode.Core;

    public sealed class LogLevel
    {
        public static readonly LogLevel Noisy = new LogLevel("NOISY");
        public static readonly LogLevel Debug = new LogLevel("DEBUG");
        public static readonly LogLevel Info = new LogLevel("INFO");
        public static readonly LogLevel Warning = new LogLevel("WARNING");
        public static readonly LogLevel Error = new LogLevel("ERROR");

        public override string ToString()
        {
            return name;
        }

        private LogLevel(string name)
        {
            this.name = name;
        }

        private readonly string name;
    }

    public static class Logger
    {
        // What the stand-in logger received, so the test harness can print it.
        public static readonly List<string> Entries = new List<string>();

        public static void Log(this IEmulationElement e, LogLevel type, string message, params object[] args)
        {
            var text = args == null || args.Length == 0 ? message : string.Format(message, args);
            Entries.Add(type + " " + text);
        }
    }
}
